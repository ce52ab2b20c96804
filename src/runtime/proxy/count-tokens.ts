/**
 * `POST /v1/messages/count_tokens` (Anthropic): the prompt's token count, rendered from scratch
 * under the same limits as a call (body, sizes, characters before tokenizing, off-loop tokenizing)
 * and in the rollout's CPU turn; nothing is remembered.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import type { ModelRuntime } from "../model/model-runtime.js";
import type { TokenizePool } from "../model/tokenize-pool.js";
import { answerError, closeAfterAnswer, sendJson } from "./call-answer.js";
import { DIALECT_HANDLERS } from "./dialects/index.js";
import { decodeJsonBody, readBody } from "./http-body.js";
import type { ProxyLimits } from "./limits.js";
import { planPrompt, RolloutPromptState, textsOf } from "./render.js";
import { inTurn, type Rollout } from "./rollouts.js";

export async function countTokens(
  deps: { model: ResolvedModel; runtime: ModelRuntime; pool: TokenizePool; limits: ProxyLimits },
  rollout: Rollout,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const anthropic = DIALECT_HANDLERS["anthropic-messages"];
  const raw = await readBody(req, deps.limits);
  if (!raw.ok) {
    if (raw.unread) closeAfterAnswer(res);
    answerError(res, anthropic, raw.kind, raw.message);
    return;
  }
  const counted = await inTurn(rollout, () => {
    const body = decodeJsonBody(raw, deps.limits);
    if (!body.ok) return body;
    const parsed = anthropic.parseRequest({ max_tokens: 1, ...(body.value as object) });
    if (!parsed.ok) return { ok: false as const, kind: "bad-request" as const, message: parsed.message };
    let plan: ReturnType<typeof planPrompt>;
    try {
      plan = planPrompt(new RolloutPromptState(), deps.runtime, parsed.request);
    } catch (err) {
      // The chat template failed for this request (e.g. past its work budget).
      return { ok: false as const, kind: "internal" as const, message: `the prompt could not be rendered: ${(err as Error).message}` };
    }
    const room = Math.max(0, deps.model.maxContextTokens - plan.knownTokens);
    if (plan.newChars > room * deps.limits.promptCharsPerToken) {
      return {
        ok: false as const,
        kind: "context-length" as const,
        message: `prompt is too long: ${plan.newChars} characters cannot fit in ${deps.model.maxContextTokens} tokens`,
      };
    }
    return { ok: true as const, known: plan.knownTokens, encoding: deps.pool.encode(textsOf(plan), rollout) };
  });
  if (!counted.ok) {
    answerError(res, anthropic, counted.kind, counted.message);
    return;
  }
  let tokens = counted.known;
  for (const ids of await counted.encoding) tokens += ids.length;
  sendJson(res, 200, { input_tokens: tokens });
}
