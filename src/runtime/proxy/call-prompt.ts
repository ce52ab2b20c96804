/** Stage 2 of a call: render the prompt token ids (TITO) and fit the completion into the context. */
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import type { ModelRuntime } from "../model/model-runtime.js";
import type { CanonicalRequest } from "./canonical.js";
import type { Refusal } from "./call-request.js";
import type { PendingCall } from "./pending-call.js";
import { type RenderedPrompt, renderPrompt } from "./render.js";

export interface CallPrompt {
  rendered: RenderedPrompt;
  /** Completion budget: the request's, the model's and what the context window leaves. */
  maxTokens: number;
}

export function renderCallPrompt(model: ResolvedModel, runtime: ModelRuntime, call: PendingCall, canonical: CanonicalRequest): { ok: true; prompt: CallPrompt } | Refusal {
  let rendered: RenderedPrompt;
  try {
    rendered = renderPrompt(call.rollout.prompts, runtime, canonical);
  } catch (err) {
    return { ok: false, kind: "internal", message: `the prompt could not be rendered: ${(err as Error).message}`, recordKind: "internal" };
  }
  call.record.promptIds = rendered.ids;
  call.record.reused = rendered.reused;
  call.record.tokenizedPromptTokens = rendered.tokenizedPromptTokens;
  const room = model.maxContextTokens - rendered.ids.length;
  if (room <= 0) {
    return { ok: false, kind: "context-length", message: `prompt is too long: ${rendered.ids.length} tokens > ${model.maxContextTokens - 1} maximum`, recordKind: "bad-request" };
  }
  return { ok: true, prompt: { rendered, maxTokens: Math.min(canonical.maxTokens ?? Infinity, model.sampling.maxTokens, room) } };
}
