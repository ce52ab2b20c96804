/**
 * Stage 2 of a call: the prompt token ids (TITO) once the new text is tokenized, checked against
 * the context before the rollout's trie keeps them, and the completion budget that fits.
 */
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import type { ModelRuntime } from "../model/model-runtime.js";
import type { CanonicalRequest } from "./canonical.js";
import type { Refusal } from "./call-request.js";
import type { PendingCall } from "./pending-call.js";
import { commitPrompt, type PromptPlan, type RenderedPrompt } from "./render.js";

export interface CallPrompt {
  rendered: RenderedPrompt;
  /** Completion budget: the request's, the model's and what the context window leaves. */
  maxTokens: number;
}

export async function renderCallPrompt(
  model: ResolvedModel,
  runtime: ModelRuntime,
  call: PendingCall,
  canonical: CanonicalRequest,
  planned: { plan: PromptPlan; encoding: Promise<number[][]> },
): Promise<{ ok: true; prompt: CallPrompt } | Refusal> {
  let encoded: number[][];
  try {
    encoded = await planned.encoding;
  } catch (err) {
    return { ok: false, kind: "internal", message: `the prompt could not be tokenized: ${(err as Error).message}`, recordKind: "internal" };
  }
  let tokens = planned.plan.knownTokens;
  for (const ids of encoded) tokens += ids.length;
  const room = model.maxContextTokens - tokens;
  if (room <= 0) {
    // Refused: the record keeps the count, not the ids, and the trie does not keep the segments.
    call.record.promptTokens = tokens;
    return {
      ok: false,
      kind: "context-length",
      code: "ContextLengthExceeded",
      message: `prompt is too long: ${tokens} tokens > ${model.maxContextTokens - 1} maximum`,
      recordKind: "bad-request",
    };
  }
  const rendered = commitPrompt(call.rollout.prompts, runtime, planned.plan, encoded);
  call.record.promptIds = rendered.ids;
  call.record.reused = rendered.reused;
  call.record.tokenizedPromptTokens = rendered.tokenizedPromptTokens;
  return { ok: true, prompt: { rendered, maxTokens: Math.min(canonical.maxTokens ?? Infinity, model.sampling.maxTokens, room) } };
}
