/**
 * Stage 1 of a call: read the body (within the byte limit and the deadline, its JSON shape measured
 * as it arrives), then in the rollout's CPU turn parse it in the dialect, classify the call, check
 * each message's size and plan the prompt: what still needs tokenizing is measured against the
 * context before the tokenizer sees it (./limits.ts).
 */
import type { IncomingMessage } from "node:http";
import type { Code } from "../../compiler/contract/codes.js";
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { isReinsError } from "../../compiler/contract/problem.js";
import type { ModelRuntime } from "../model/model-runtime.js";
import type { TokenizePool } from "../model/tokenize-pool.js";
import type { CanonicalRequest } from "./canonical.js";
import { classifyCall } from "./classify.js";
import type { DialectHandler, ProxyErrorKind } from "./dialects/dialect.js";
import { decodeJsonBody, readBody } from "./http-body.js";
import type { ProxyLimits } from "./limits.js";
import type { CallErrorKind, PendingCall } from "./pending-call.js";
import { type PromptPlan, planPrompt, textsOf } from "./render.js";
import { inTurn, type Rollout } from "./rollouts.js";

export interface CallRequest {
  canonical: CanonicalRequest;
  /** The request body as received (dialects echo parts of it). */
  body: Record<string, unknown>;
  /** The prompt as far as the rollout knows it, and the ids of the rest on their way. */
  plan: PromptPlan;
  encoding: Promise<number[][]>;
}

/** A call the proxy refuses before generating: the dialect's error kind and the record's. */
export interface Refusal {
  ok: false;
  kind: ProxyErrorKind;
  message: string;
  recordKind: CallErrorKind;
  /** The catalogued code of the limit that refused it. */
  code?: Code;
  /** The body was not read to its end: the connection is closed after the answer. */
  unread?: boolean;
}

/** Bodies up to this size take a millisecond or two to parse and plan: no need to wait for a turn. */
const LIGHT_BODY_BYTES = 256 * 1024;

export interface RequestDeps {
  model: ResolvedModel;
  runtime: ModelRuntime;
  pool: TokenizePool;
  limits: ProxyLimits;
}

export async function readCallRequest(
  deps: RequestDeps,
  call: PendingCall,
  dialect: DialectHandler,
  req: IncomingMessage,
): Promise<{ ok: true; request: CallRequest } | Refusal> {
  const raw = await readBody(req, deps.limits);
  if (!raw.ok) return refusal(raw);
  // Two CPU turns (parse; then check and plan), so that a large body's work has a break between.
  const light = raw.raw.length <= LIGHT_BODY_BYTES;
  const body = await inTurn(call.rollout, () => decodeJsonBody(raw, deps.limits), light);
  if (!body.ok) return refusal(body);
  call.record.bodyBytes = body.bytes;
  return inTurn(
    call.rollout,
    () => {
      const parsed = dialect.parseRequest(body.value);
      if (!parsed.ok) return { ok: false, kind: "bad-request", message: parsed.message, recordKind: "bad-request" } as const;
      const canonical = parsed.request;
      call.record.model = canonical.model;
      call.record.stream = canonical.stream;
      call.record.callClass = classifyCall(call.rollout.callClasses, canonical, req.headers);
      const tooLarge = checkSizes(canonical, deps.limits);
      if (tooLarge) return tooLarge;
      const planned = planCallPrompt(deps, call.rollout, canonical);
      if (!planned.ok) return planned;
      return { ok: true, request: { canonical, body: body.value as Record<string, unknown>, ...planned } } as const;
    },
    light,
  );
}

/** Plan the prompt and start tokenizing what is new, unless it cannot fit in the context. */
export function planCallPrompt(
  deps: RequestDeps,
  rollout: Rollout,
  canonical: CanonicalRequest,
): { ok: true; plan: PromptPlan; encoding: Promise<number[][]> } | Refusal {
  let plan: PromptPlan;
  try {
    plan = planPrompt(rollout.prompts, deps.runtime, canonical);
  } catch (err) {
    // The chat template failed for this request (ChatTemplateTooMuchWork: past its work budget): a 500 with the code.
    if (isReinsError(err))
      return { ok: false, kind: "internal", message: `the prompt could not be rendered (${err.code}): ${err.message}`, recordKind: "internal", code: err.code };
    return { ok: false, kind: "internal", message: `the prompt could not be rendered: ${(err as Error).message}`, recordKind: "internal" };
  }
  const room = Math.max(0, deps.model.maxContextTokens - plan.knownTokens);
  if (plan.newChars > room * deps.limits.promptCharsPerToken) {
    return {
      ok: false,
      kind: "context-length",
      code: "PromptTooLong",
      recordKind: "bad-request",
      message: `prompt is too long: ${plan.newChars} new characters cannot fit in the ${room} tokens the context has left (${plan.knownTokens} of ${deps.model.maxContextTokens} are taken; at most ${deps.limits.promptCharsPerToken} characters per token)`,
    };
  }
  return { ok: true, plan, encoding: deps.pool.encode(textsOf(plan), rollout) };
}

/** One message's characters and one tool call's argument characters, before any rendering. */
function checkSizes(req: CanonicalRequest, limits: ProxyLimits): Refusal | undefined {
  const tooLarge = (refused: { code: Code; message: string }): Refusal => ({ ok: false, kind: "too-large", recordKind: "bad-request", ...refused });
  if (req.system !== undefined && req.system.length > limits.maxMessageChars) {
    return tooLarge({ code: "MessageTooLarge", message: `the system prompt has ${req.system.length} characters; the limit is ${limits.maxMessageChars}` });
  }
  for (const [i, m] of req.messages.entries()) {
    let chars = m.content.length;
    if (m.role === "assistant") {
      chars += m.reasoning?.length ?? 0;
      for (const tc of m.toolCalls) {
        if (tc.arguments.length > limits.maxToolArgumentChars) {
          const message = `messages[${i}]: the arguments of tool call ${JSON.stringify(tc.name.slice(0, 64))} have ${tc.arguments.length} characters; the limit is ${limits.maxToolArgumentChars}`;
          return tooLarge({ code: "ToolArgumentsTooLarge", message });
        }
        chars += tc.arguments.length + tc.name.length;
      }
    }
    if (chars > limits.maxMessageChars)
      return tooLarge({ code: "MessageTooLarge", message: `messages[${i}] (${m.role}) has ${chars} characters; the limit is ${limits.maxMessageChars}` });
  }
  return undefined;
}

function refusal(failure: { kind: ProxyErrorKind; message: string; code?: Code; unread?: boolean }): Refusal {
  return {
    ok: false,
    kind: failure.kind,
    message: failure.message,
    recordKind: "bad-request",
    ...(failure.code ? { code: failure.code } : {}),
    ...(failure.unread ? { unread: true } : {}),
  };
}
