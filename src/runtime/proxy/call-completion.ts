/**
 * Stage 4 of a call: parse the raw completion ids into text, reasoning and tool calls, record
 * them, keep them for later prompts (TITO), and build the dialect-neutral completion to answer.
 */
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import type { GenerateResult } from "../engines/engine.js";
import type { ModelRuntime } from "../model/model-runtime.js";
import type { CanonicalCompletion, CanonicalRequest, CompletionFinish } from "./canonical.js";
import type { CallPrompt } from "./call-prompt.js";
import type { DialectHandler } from "./dialects/dialect.js";
import type { PendingCall } from "./pending-call.js";

export function parseCallCompletion(
  deps: { model: ResolvedModel; runtime: ModelRuntime },
  call: PendingCall,
  dialect: DialectHandler,
  canonical: CanonicalRequest,
  prompt: CallPrompt,
  result: GenerateResult,
): CanonicalCompletion {
  const { record, rollout } = call;
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

  const toolCallIds = parsed.toolCalls.map((_, i) => dialect.toolCallId(`${call.key}:${i}`));
  rollout.prompts.addCompletion(deps.runtime, record.seq, prompt.rendered.end, result.ids, parsed, toolCallIds);
  return {
    callKey: call.key,
    model: canonical.model || deps.model.name,
    parsed,
    finish,
    toolCallIds,
    promptTokens: prompt.rendered.ids.length,
    completionTokens: result.ids.length,
  };
}
