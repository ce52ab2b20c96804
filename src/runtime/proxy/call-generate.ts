/**
 * Stage 3 of a call: ask the engine for a completion by token ids, streaming when it can (the
 * first chunk dates `firstTokenMs`; a live answer writes each chunk as it comes), stopping when
 * the client goes away, and keeping a streaming client's connection alive with comments while it
 * waits for the first token.
 */
import type { ServerResponse } from "node:http";
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { type Engine, EngineError, type GenerateChunk, type GenerateRequest, type GenerateResult } from "../engines/engine.js";
import type { ModelRuntime } from "../model/model-runtime.js";
import type { CallPrompt } from "./call-prompt.js";
import type { LiveAnswer } from "./call-stream.js";
import type { PendingCall } from "./pending-call.js";
import { KEEPALIVE, startEventStream } from "./sse.js";

/** After this long without a result, a streaming answer starts with keep-alive comments. */
const KEEPALIVE_AFTER_MS = 2000;
const KEEPALIVE_EVERY_MS = 10_000;

/** What the engine gave: a completion, one whose stream broke after `result`, or a failure. */
export type Generated =
  | { kind: "done"; result: GenerateResult }
  | { kind: "cut"; result: GenerateResult; message: string }
  | { kind: "failed"; message: string };

/** The client's side of the connection: aborted when it closes before the answer was written. */
export interface ClientWatch {
  signal: AbortSignal;
  gone(): boolean;
}

export function watchClient(res: ServerResponse): ClientWatch {
  const abort = new AbortController();
  let gone = false;
  res.on("close", () => {
    if (!res.writableFinished) {
      gone = true;
      abort.abort();
    }
  });
  return { signal: abort.signal, gone: () => gone };
}

export async function generateCompletion(
  deps: { model: ResolvedModel; runtime: ModelRuntime; engine: Engine },
  call: PendingCall,
  prompt: CallPrompt,
  client: ClientWatch,
  res: ServerResponse,
  live?: LiveAnswer,
): Promise<Generated> {
  const { sampling } = deps.model;
  const req: GenerateRequest = {
    promptIds: prompt.rendered.ids,
    sampling: { temperature: sampling.temperature, topP: sampling.topP, maxTokens: prompt.maxTokens, stopIds: deps.runtime.stopIds },
    rolloutId: call.rollout.rolloutId,
    try: call.rollout.try,
    seq: call.record.seq,
    ...(call.rollout.harness !== undefined ? { harness: call.rollout.harness } : {}),
    signal: client.signal,
  };
  const stopKeepalive = call.record.stream ? keepAlive(res) : () => {};
  const onChunk = (chunk: GenerateChunk) => {
    call.record.timings.firstTokenMs ??= Date.now();
    if (!live) return;
    stopKeepalive();
    live.push(chunk.ids);
  };
  call.record.timings.engineStartMs = Date.now();
  try {
    const result = deps.engine.generateStream ? await deps.engine.generateStream(req, onChunk) : await deps.engine.generate(req);
    return { kind: "done", result };
  } catch (err) {
    if (err instanceof EngineError && err.kind === "stream-cut" && err.partial) return { kind: "cut", result: err.partial, message: err.message };
    return { kind: "failed", message: err instanceof EngineError ? err.message : `engine failed: ${(err as Error).message}` };
  } finally {
    call.record.timings.engineDoneMs = Date.now();
    stopKeepalive();
  }
}

/** Start keep-alive comments if the engine takes long; returns the function that stops them. */
function keepAlive(res: ServerResponse): () => void {
  let every: NodeJS.Timeout | undefined;
  const start = setTimeout(() => {
    startEventStream(res);
    res.write(KEEPALIVE);
    every = setInterval(() => res.write(KEEPALIVE), KEEPALIVE_EVERY_MS);
  }, KEEPALIVE_AFTER_MS);
  return () => {
    clearTimeout(start);
    clearInterval(every);
  };
}
