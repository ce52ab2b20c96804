/**
 * Everything the proxy and the engines need to speak a model's token language: the tokenizer,
 * the chat template cut into pieces, the output format, and the stop token ids.
 * Loading is an effect (files, a large tokenizer package); the result is reused per model.
 */
import { CODES, type Code } from "../../compiler/contract/codes.js";
import { diagnosticOf, type Diagnostic } from "../../compiler/contract/diagnostics.js";
import { ReinsError } from "../../compiler/contract/problem.js";
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { ChatTemplate, ChatTemplateError } from "./chat-template.js";
import { type OutputFormat, type ParsedCompletion, parseCompletion } from "./output-format.js";
import { loadTokenizer, type Tokenizer, TokenizerLoadError } from "./tokenizer.js";

export interface ModelRuntime {
  model: ResolvedModel;
  tokenizer: Tokenizer;
  template: ChatTemplate;
  format: OutputFormat;
  /** Ids of model.stopTokens, in order. */
  stopIds: number[];
  /** Token ids of the generation prompt (`<|im_start|>assistant\n`). */
  generationPromptIds: number[];
  /** The stop token the template's assistant closing starts with (`<|im_end|>`), if any. */
  closingStopId?: number;
  /** Ids appended after a completion that ended on `closingStopId`, to close the turn (`\n`). */
  closingAfterStopIds: number[];
  /** Ids appended after a completion that ended otherwise (token limit, another stop token): `<|im_end|>\n`. */
  closingWithoutStopIds: number[];
  /** Decode completion ids (without a trailing stop id) and parse them. */
  parse(completionIds: readonly number[]): { raw: string; parsed: ParsedCompletion };
}

/** A model that could not be loaded (no file position: it is a runtime check). */
export class ModelLoadError extends ReinsError {
  /** The same problem as a diagnostic (file "", line 0). */
  get diagnostic(): Diagnostic {
    return diagnosticOf(this.problem);
  }
}

const runtimes = new WeakMap<ResolvedModel, Promise<ModelRuntime>>();

/** Load the runtime for a model (cached per ResolvedModel object). Rejects with ModelLoadError. */
export function loadModelRuntime(model: ResolvedModel): Promise<ModelRuntime> {
  let pending = runtimes.get(model);
  if (!pending) {
    pending = buildRuntime(model);
    runtimes.set(model, pending);
  }
  return pending;
}

async function buildRuntime(model: ResolvedModel): Promise<ModelRuntime> {
  let tokenizer: Tokenizer;
  const named = model.tokenizer;
  if (!named)
    throw fail(
      "TokenizerRequired",
      `model ${model.name} has no tokenizer (a ${model.engine.type} engine is asked in text, not token ids)`,
      "Give the Model a tokenizer, or use it where text is enough (a rubric judge, an Evaluation's hosted policy).",
    );
  try {
    tokenizer = await loadTokenizer(named);
  } catch (err) {
    if (err instanceof TokenizerLoadError)
      throw fail(
        err.code,
        err.message,
        err.code === "TokenizerNotFound" || err.code === "TokenizerInvalid" ? "Check spec.tokenizer.path in the Model." : err.hint,
      );
    throw err;
  }
  const source = model.chatTemplate ?? tokenizer.chatTemplate;
  if (!source) {
    throw fail(
      "ChatTemplateMissing",
      `model ${model.name} has no chat template and its tokenizer ships none`,
      "Set spec.chatTemplate in the Model, put a tokenizer_config.json with chat_template next to tokenizer.json, or name the whole Hugging Face directory: tokenizer: {type: huggingface, path: DIR}.",
    );
  }
  let template: ChatTemplate;
  try {
    template = new ChatTemplate(source, model.chatTemplateVariables);
  } catch (err) {
    if (err instanceof ChatTemplateError) {
      const from =
        model.chatTemplate === undefined
          ? "the tokenizer's own template"
          : named.type === "huggingface"
            ? `spec.chatTemplate, else the template of ${named.path}`
            : "spec.chatTemplate";
      const hint =
        err.code === "ChatTemplateTooMuchWork"
          ? CODES.ChatTemplateTooMuchWork
          : "Use a template that renders each message on its own, system prompt and tools first (Qwen3, Qwen2.5, Hermes, ChatML, Llama 3 style); or give one with spec.chatTemplate or spec.chatTemplateFile.";
      throw fail(err.code, `${err.message} (${from})`, hint);
    }
    throw err;
  }
  const stopIds: number[] = [];
  for (const token of model.stopTokens) {
    const id = tokenizer.tokenId(token);
    if (id === undefined) {
      throw fail(
        "StopTokenUnknown",
        `stop token ${JSON.stringify(token)} is not in the tokenizer's vocabulary`,
        "List stop tokens exactly as the tokenizer spells them, e.g. <|im_end|>.",
      );
    }
    stopIds.push(id);
  }
  const closing = template.assistantClosing;
  const stopText = model.stopTokens.find((t) => closing.startsWith(t));
  const format: OutputFormat = { toolCallFormat: model.toolCallFormat, reasoning: model.reasoning };
  const stopSet = new Set(stopIds);
  const closingStopId = stopText !== undefined ? tokenizer.tokenId(stopText) : undefined;
  return {
    model,
    tokenizer,
    ...(closingStopId !== undefined ? { closingStopId } : {}),
    template,
    format,
    stopIds,
    generationPromptIds: tokenizer.encode(template.generationPrompt),
    closingAfterStopIds: tokenizer.encode(stopText ? closing.slice(stopText.length) : closing),
    closingWithoutStopIds: tokenizer.encode(closing),
    parse(completionIds) {
      const ids = completionIds.length > 0 && stopSet.has(completionIds[completionIds.length - 1]!) ? completionIds.slice(0, -1) : completionIds;
      const raw = tokenizer.decode(ids);
      return { raw, parsed: parseCompletion(raw, format) };
    },
  };
}

function fail(code: Code, message: string, hint: string): ModelLoadError {
  return new ModelLoadError(code, message, hint);
}
