/**
 * One model call through the proxy: request → canonical conversation → prompt ids (TITO) →
 * engine → parsed completion → answer in the harness's dialect → call record.
 * Every path ends in exactly one record, including bad requests, engine errors, injected faults
 * and clients that went away.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { type Engine, EngineError, type GenerateResult } from "../engines/engine.js";
import type { ModelRuntime } from "../model/model-runtime.js";
import type { CanonicalCompletion, CompletionFinish, SseEvent } from "./canonical.js";
import { classifyCall } from "./classify.js";
import type { DialectHandler, ProxyErrorKind } from "./dialects/dialect.js";
import { readJsonBody } from "./http-body.js";
import { makeReasoningToken } from "./ids.js";
import type { CallRecord } from "../records/call-record.js";
import { renderPrompt } from "./render.js";
import type { Rollout } from "./rollouts.js";
import { formatEvent, KEEPALIVE, startEventStream } from "./sse.js";

export interface CallDeps {
  model: ResolvedModel;
  runtime: ModelRuntime;
  engine: Engine;
  record(rollout: Rollout, record: CallRecord): void;
}

/** After this long without a result, a streaming answer starts with keep-alive comments. */
const KEEPALIVE_AFTER_MS = 2000;
const KEEPALIVE_EVERY_MS = 10_000;

export async function handleModelCall(deps: CallDeps, rollout: Rollout, dialect: DialectHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const receivedMs = Date.now();
  const seq = rollout.nextSeq++;
  const record: CallRecord = {
    v: 1,
    rollout: rollout.id,
    seq,
    dialect: dialect.name,
    model: "",
    stream: false,
    promptIds: [],
    completionIds: [],
    completionLogprobs: [],
    finishReason: "error",
    parse: { ok: false },
    callClass: "main",
    reused: [],
    tokenizedPromptTokens: 0,
    weightsVersion: rollout.weightsVersion ?? "",
    timings: { receivedMs, doneMs: receivedMs },
  };
  let recorded = false;
  const finishRecord = () => {
    if (recorded) return;
    recorded = true;
    record.timings.doneMs = Date.now();
    deps.record(rollout, record);
  };
  const fail = (kind: ProxyErrorKind, message: string, recordKind: NonNullable<CallRecord["error"]>["kind"]) => {
    record.error = { kind: recordKind, message };
    const { status, body } = dialect.errorResponse(kind, message);
    sendJson(res, status, body);
    finishRecord();
  };

  const body = await readJsonBody(req);
  if (!body.ok) return fail(body.kind, body.message, "bad-request");
  const parsedReq = dialect.parseRequest(body.value);
  if (!parsedReq.ok) return fail("bad-request", parsedReq.message, "bad-request");
  const canonical = parsedReq.request;
  const rawBody = body.value as Record<string, unknown>;
  record.model = canonical.model;
  record.stream = canonical.stream;
  record.callClass = classifyCall(rollout.callClasses, canonical, req.headers);

  let rendered: ReturnType<typeof renderPrompt>;
  try {
    rendered = renderPrompt(rollout.prompts, deps.runtime, canonical);
  } catch (err) {
    return fail("internal", `the prompt could not be rendered: ${(err as Error).message}`, "internal");
  }
  record.promptIds = rendered.ids;
  record.reused = rendered.reused;
  record.tokenizedPromptTokens = rendered.tokenizedPromptTokens;
  const room = deps.model.maxContextTokens - rendered.ids.length;
  if (room <= 0) {
    return fail(
      "context-length",
      `prompt is too long: ${rendered.ids.length} tokens > ${deps.model.maxContextTokens - 1} maximum`,
      "bad-request",
    );
  }
  const maxTokens = Math.min(canonical.maxTokens ?? Infinity, deps.model.sampling.maxTokens, room);

  // The client may go away at any point; generation then stops.
  const abort = new AbortController();
  let clientGone = false;
  res.on("close", () => {
    if (!res.writableFinished) {
      clientGone = true;
      abort.abort();
    }
  });
  let keepalive: NodeJS.Timeout | undefined;
  let keepaliveStart: NodeJS.Timeout | undefined;
  if (canonical.stream) {
    keepaliveStart = setTimeout(() => {
      startEventStream(res);
      res.write(KEEPALIVE);
      keepalive = setInterval(() => res.write(KEEPALIVE), KEEPALIVE_EVERY_MS);
    }, KEEPALIVE_AFTER_MS);
  }
  const stopKeepalive = () => {
    clearTimeout(keepaliveStart);
    clearInterval(keepalive);
  };

  let result: GenerateResult;
  try {
    const genReq = {
      promptIds: rendered.ids,
      sampling: { temperature: deps.model.sampling.temperature, topP: deps.model.sampling.topP, maxTokens, stopIds: deps.runtime.stopIds },
      rollout: rollout.id,
      seq,
      signal: abort.signal,
    };
    const onChunk = () => {
      record.timings.firstTokenMs ??= Date.now();
    };
    result = deps.engine.generateStream ? await deps.engine.generateStream(genReq, onChunk) : await deps.engine.generate(genReq);
  } catch (err) {
    stopKeepalive();
    if (clientGone) {
      record.finishReason = "aborted";
      record.error = { kind: "client-disconnect", message: "the client closed the connection before the completion finished" };
      finishRecord();
      return;
    }
    const message = err instanceof EngineError ? err.message : `engine failed: ${(err as Error).message}`;
    record.error = { kind: "engine", message };
    if (res.headersSent) writeEventsAndEnd(res, dialect.streamError("engine", message));
    else sendJson(res, dialect.errorResponse("engine", message).status, dialect.errorResponse("engine", message).body);
    finishRecord();
    return;
  }
  stopKeepalive();
  record.timings.firstTokenMs ??= Date.now();
  record.weightsVersion = result.weightsVersion || rollout.weightsVersion || "";
  record.completionIds = result.ids;
  record.completionLogprobs = result.logprobs;

  const { parsed } = deps.runtime.parse(result.ids);
  const finish: CompletionFinish = result.finish === "length" ? "length" : parsed.toolCalls.length > 0 ? "tool_calls" : "stop";
  record.finishReason = finish;
  record.parse = { ok: !parsed.error && finish !== "length" };
  if (parsed.error) record.parse.error = parsed.error;
  else if (finish === "length") record.parse.error = "truncated";
  if (parsed.detail) record.parse.detail = parsed.detail;

  const toolCallIds = parsed.toolCalls.map((_, i) => dialect.toolCallId(`${rollout.id}:${seq}:${i}`));
  rollout.prompts.addCompletion(deps.runtime, seq, rendered.end, result.ids, parsed, toolCallIds);
  const completion: CanonicalCompletion = {
    callKey: `${rollout.id}:${seq}`,
    model: canonical.model || deps.model.name,
    parsed,
    finish,
    toolCallIds,
    promptTokens: rendered.ids.length,
    completionTokens: result.ids.length,
    reasoningToken: makeReasoningToken(`${rollout.id}:${seq}`),
  };

  if (clientGone) {
    record.finishReason = "aborted";
    record.error = { kind: "client-disconnect", message: "the client closed the connection before the answer was sent" };
    finishRecord();
    return;
  }
  res.on("close", () => {
    if (!res.writableFinished && !record.error) {
      record.error = { kind: "client-disconnect", message: "the client closed the connection while the answer was sent" };
      record.finishReason = "aborted";
    }
    finishRecord();
  });
  if (!canonical.stream) {
    sendJson(res, 200, dialect.buildResponse(completion, rawBody));
    return;
  }
  const events = dialect.buildEvents(completion, rawBody);
  startEventStream(res);
  if (result.fault === "cut-stream") {
    const cutAt = events.findIndex((e) => e.midToolCall);
    const upTo = cutAt >= 0 ? cutAt + 1 : Math.ceil(events.length / 2);
    record.finishReason = "aborted";
    record.error = { kind: "engine", message: `stream cut after event ${upTo} of ${events.length} (fault injection: cut-stream)` };
    res.write(events.slice(0, upTo).map(formatEvent).join(""), () => res.socket?.destroy());
    return;
  }
  writeEventsAndEnd(res, events);
}

function writeEventsAndEnd(res: ServerResponse, events: SseEvent[]): void {
  startEventStream(res);
  res.end(events.map(formatEvent).join(""));
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
