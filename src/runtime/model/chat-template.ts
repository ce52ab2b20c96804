/**
 * The chat template, rendered with @huggingface/jinja, cut into pieces the prompt renderer can
 * tokenize separately: the header (system prompt + tools), one piece per message group, the
 * generation prompt, and the text that closes an assistant turn after its stop token.
 *
 * Pieces are found by rendering with probe messages and removing the probes' own text, so any
 * template whose output for a message does not depend on the messages around it (Qwen3, Qwen2.5,
 * Hermes, ChatML-style templates) can be cut this way. A template that cannot is reported when the
 * model is loaded (`ChatTemplateNotSegmentable`).
 */
import type { Template } from "@huggingface/jinja";
import { ChatTemplateTooMuchWork, parseChatTemplate, renderChatTemplate } from "../../compiler/index.js";
import { ReinsError } from "../../compiler/contract/problem.js";

export interface TemplateToolCall {
  type: "function";
  id?: string;
  function: { name: string; arguments: unknown };
}

export interface TemplateMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  reasoning_content?: string;
  tool_calls?: TemplateToolCall[];
  tool_call_id?: string;
  name?: string;
}

export interface TemplateTool {
  type: "function";
  function: { name: string; description?: string; parameters: unknown };
}

export type ChatTemplateErrorCode = "ChatTemplateMissing" | "ChatTemplateInvalid" | "ChatTemplateNotSegmentable" | "ChatTemplateTooMuchWork";

export class ChatTemplateError extends ReinsError {
  declare readonly code: ChatTemplateErrorCode;

  constructor(message: string, code: ChatTemplateErrorCode) {
    super(code, message);
  }
}

const PROBE_SYSTEM = "reins-probe-system-7f3a";
const PROBE_USER = "reins-probe-user-7f3a";
const PROBE_ASSISTANT = "reins-probe-assistant-7f3a";

export class ChatTemplate {
  private readonly template: Template;
  private readonly probeSystem: string;
  private readonly probeTail: string;
  /** `<|im_start|>assistant\n` for Qwen3. */
  readonly generationPrompt: string;
  /** Text the template writes after an assistant turn's content, e.g. `<|im_end|>\n`. */
  readonly assistantClosing: string;

  /**
   * `variables`: what the template sees besides messages, tools and add_generation_prompt (a
   * tokenizer's bos_token, eos_token, ... as transformers passes them).
   */
  constructor(
    source: string,
    private readonly variables: Readonly<Record<string, string>> = {},
  ) {
    try {
      this.template = parseChatTemplate(source);
    } catch (err) {
      throw new ChatTemplateError(`the chat template does not parse: ${(err as Error).message}`, "ChatTemplateInvalid");
    }
    const sys: TemplateMessage = { role: "system", content: PROBE_SYSTEM };
    const user: TemplateMessage = { role: "user", content: PROBE_USER };
    this.probeSystem = this.render([sys], undefined, false);
    const withTail = this.render([sys, user], undefined, false);
    if (!withTail.startsWith(this.probeSystem)) {
      throw new ChatTemplateError("the chat template rewrites earlier messages when one is added", "ChatTemplateNotSegmentable");
    }
    this.probeTail = withTail.slice(this.probeSystem.length);
    const withPrompt = this.render([sys, user], undefined, true);
    if (!withPrompt.startsWith(withTail)) {
      throw new ChatTemplateError("the generation prompt does not extend the rendered messages", "ChatTemplateNotSegmentable");
    }
    this.generationPrompt = withPrompt.slice(withTail.length);
    const asst = this.group([{ role: "assistant", content: PROBE_ASSISTANT }]);
    const at = asst.lastIndexOf(PROBE_ASSISTANT);
    if (at < 0) throw new ChatTemplateError("the chat template drops assistant content", "ChatTemplateNotSegmentable");
    this.assistantClosing = asst.slice(at + PROBE_ASSISTANT.length);
  }

  /**
   * Plain render of a whole conversation, on the work budget of src/compiler/resolve/chat-template-render.ts
   * (a template that loops too long for these messages fails with ChatTemplateTooMuchWork).
   */
  render(messages: TemplateMessage[], tools: TemplateTool[] | undefined, addGenerationPrompt: boolean): string {
    const ctx: Record<string, unknown> = { ...this.variables, messages, add_generation_prompt: addGenerationPrompt };
    if (tools && tools.length > 0) ctx.tools = tools;
    try {
      return renderChatTemplate(this.template, ctx);
    } catch (err) {
      if (err instanceof ChatTemplateTooMuchWork) throw new ChatTemplateError(err.message, "ChatTemplateTooMuchWork");
      throw new ChatTemplateError(`the chat template failed to render: ${(err as Error).message}`, "ChatTemplateInvalid");
    }
  }

  /** The header: what the template writes before the first non-system message (system prompt, tools). */
  header(system: string | undefined, tools: TemplateTool[]): string {
    const msgs: TemplateMessage[] = system !== undefined ? [{ role: "system", content: system }] : [];
    msgs.push({ role: "user", content: PROBE_USER });
    const full = this.render(msgs, tools, false);
    if (!full.endsWith(this.probeTail)) {
      throw new ChatTemplateError("the chat template renders the first user message differently", "ChatTemplateNotSegmentable");
    }
    return full.slice(0, full.length - this.probeTail.length);
  }

  /**
   * The text of a group of messages as it appears mid-conversation: after some earlier message and
   * before a later user message. A group is one message or a run of consecutive tool results.
   */
  group(messages: TemplateMessage[]): string {
    const sys: TemplateMessage = { role: "system", content: PROBE_SYSTEM };
    const tail: TemplateMessage = { role: "user", content: PROBE_USER };
    const full = this.render([sys, ...messages, tail], undefined, false);
    if (!full.startsWith(this.probeSystem) || !full.endsWith(this.probeTail)) {
      throw new ChatTemplateError(
        `the chat template renders a ${messages[0]?.role ?? "empty"} message differently depending on its neighbours`,
        "ChatTemplateNotSegmentable",
      );
    }
    return full.slice(this.probeSystem.length, full.length - this.probeTail.length);
  }
}
