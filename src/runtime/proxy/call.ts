/**
 * One model call through the proxy, as its stages: read the request → render the prompt ids
 * (TITO) → generate → parse the completion → answer in the harness's dialect. The call's record
 * is opened on arrival and handed over exactly once on every path — bad requests, engine errors,
 * broken engine streams and clients that went away included.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import type { Engine } from "../engines/engine.js";
import type { ModelRuntime } from "../model/model-runtime.js";
import type { TokenizePool } from "../model/tokenize-pool.js";
import type { CallRecord } from "../records/index.js";
import { answerCompletion, answerCut, answerError, closeAfterAnswer, recordWhenClosed } from "./call-answer.js";
import { parseCallCompletion } from "./call-completion.js";
import { generateCompletion, watchClient } from "./call-generate.js";
import { LiveAnswer } from "./call-stream.js";
import type { CanonicalRequest } from "./canonical.js";
import { renderCallPrompt } from "./call-prompt.js";
import { readCallRequest, type Refusal } from "./call-request.js";
import type { DialectHandler } from "./dialects/dialect.js";
import type { ProxyLimits } from "./limits.js";
import { openCall, type PendingCall } from "./pending-call.js";
import type { Rollout } from "./rollouts.js";
import { checkAgainstTemplate } from "./template-check.js";

export { closeAfterAnswer, sendJson } from "./call-answer.js";

export interface CallDeps {
  model: ResolvedModel;
  runtime: ModelRuntime;
  engine: Engine;
  pool: TokenizePool;
  limits: ProxyLimits;
  record(rollout: Rollout, record: CallRecord): void;
}

export async function handleModelCall(deps: CallDeps, rollout: Rollout, dialect: DialectHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const call = openCall(rollout, dialect, deps.record);
  if (rollout.open >= deps.limits.maxRequestsPerRollout) {
    const message = `the rollout has ${rollout.open} requests open; the limit is ${deps.limits.maxRequestsPerRollout}`;
    return refuseCall(call, res, dialect, { ok: false, kind: "too-many-requests", code: "TooManyRequests", message, recordKind: "bad-request", unread: true });
  }
  rollout.open++;
  res.once("close", () => rollout.open--);
  const read = await readCallRequest(deps, call, dialect, req);
  if (!read.ok) return refuseCall(call, res, dialect, read);
  const { canonical, body } = read.request;
  const rendered = await renderCallPrompt(deps.model, deps.runtime, call, canonical, read.request);
  if (!rendered.ok) return refuseCall(call, res, dialect, rendered);
  // The first call of a try is compared with the chat template's own rendering while the engine generates.
  const templateCheck =
    call.record.seq === 0 ? checkAgainstTemplate(deps.runtime, deps.pool, rollout, canonical, rendered.prompt.rendered.ids, read.request.plan) : undefined;
  const client = watchClient(res);
  const live =
    canonical.stream && deps.engine.generateStream ? openLiveAnswer(deps, call, dialect, canonical, rendered.prompt.rendered.ids.length, body, res) : undefined;
  const generated = await generateCompletion(deps, call, rendered.prompt, client, res, live);
  if (generated.kind === "failed") {
    live?.flush();
    return failCall(call, res, dialect, client.gone(), generated.message);
  }
  const checked = await templateCheck;
  if (checked) call.record.templateCheck = checked;
  const completion = parseCallCompletion(deps, call, dialect, canonical, rendered.prompt, generated.result);
  if (client.gone()) return abandonCall(call, "before the answer was sent");
  recordWhenClosed(call, res);
  if (live) return generated.kind === "cut" ? live.cut(call, completion, generated.message) : live.finish(completion);
  if (generated.kind === "cut") return answerCut(call, res, dialect, completion, body, generated.message);
  answerCompletion(res, dialect, completion, body, canonical.stream);
}

/** A streaming request to an engine that streams is answered token by token (call-stream.ts). */
function openLiveAnswer(
  deps: CallDeps,
  call: PendingCall,
  dialect: DialectHandler,
  canonical: CanonicalRequest,
  promptTokens: number,
  body: Record<string, unknown>,
  res: ServerResponse,
): LiveAnswer {
  const head = {
    callKey: call.key,
    model: canonical.model || deps.model.name,
    promptTokens,
    toolCallId: (i: number) => dialect.toolCallId(`${call.key}:${i}`),
  };
  return new LiveAnswer(res, deps.runtime, dialect, head, body);
}

/** Refused before generating: the dialect's error, the record without prompt ids; an unread body closes the connection. */
function refuseCall(call: PendingCall, res: ServerResponse, dialect: DialectHandler, refusal: Refusal): void {
  call.setError(refusal.recordKind, refusal.message, undefined, refusal.code);
  if (refusal.unread) closeAfterAnswer(res);
  answerError(res, dialect, refusal.kind, refusal.message);
  call.finish();
}

/** The engine failed: an engine error in the dialect's shape — unless nobody is listening any more. */
function failCall(call: PendingCall, res: ServerResponse, dialect: DialectHandler, clientGone: boolean, message: string): void {
  if (clientGone) return abandonCall(call, "before the completion finished");
  call.setError("engine", message);
  answerError(res, dialect, "engine", message);
  call.finish();
}

function abandonCall(call: PendingCall, when: string): void {
  call.setError("client-disconnect", `the client closed the connection ${when}`, "aborted");
  call.finish();
}
