/** The output items and response object of an OpenAI Responses answer, shared by the whole and the live stream. */
import type { CanonicalCompletion } from "../canonical.js";
import { makeId } from "../ids.js";
import { isRecord } from "./dialect.js";

/** What a response object shows of its completion (usage only once it is done). */
export type ResponseHead = Pick<CanonicalCompletion, "callKey" | "model" | "promptTokens" | "completionTokens">;

export function customToolNames(body: Record<string, unknown>): Set<string> {
  const names = new Set<string>();
  for (const t of Array.isArray(body.tools) ? body.tools : []) if (isRecord(t) && t.type === "custom" && typeof t.name === "string") names.add(t.name);
  return names;
}

export function wantsReasoning(body: Record<string, unknown>): boolean {
  return body.reasoning !== undefined && body.reasoning !== null;
}

export function wantsEncrypted(body: Record<string, unknown>): boolean {
  return Array.isArray(body.include) && body.include.includes("reasoning.encrypted_content");
}

export function outputItems(c: CanonicalCompletion, body: Record<string, unknown>): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  if (c.parsed.reasoning && (wantsReasoning(body) || wantsEncrypted(body))) {
    const item: Record<string, unknown> = {
      id: makeId("rs_", `${c.callKey}:reasoning`),
      type: "reasoning",
      summary: [{ type: "summary_text", text: c.parsed.reasoning }],
    };
    if (wantsEncrypted(body)) item.encrypted_content = c.reasoningToken;
    items.push(item);
  }
  if (c.parsed.text) {
    items.push({
      id: makeId("msg_", `${c.callKey}:message`),
      type: "message",
      status: c.finish === "length" && c.parsed.toolCalls.length === 0 ? "incomplete" : "completed",
      role: "assistant",
      content: [{ type: "output_text", text: c.parsed.text, annotations: [], logprobs: [] }],
    });
  }
  const custom = customToolNames(body);
  c.parsed.toolCalls.forEach((tc, i) => {
    if (custom.has(tc.name)) {
      const input = typeof tc.arguments?.input === "string" ? tc.arguments.input : tc.argumentsText;
      items.push({ id: makeId("ctc_", `${c.callKey}:fc:${i}`), type: "custom_tool_call", status: "completed", call_id: c.toolCallIds[i], name: tc.name, input });
      return;
    }
    items.push({
      id: makeId("fc_", `${c.callKey}:fc:${i}`),
      type: "function_call",
      status: "completed",
      call_id: c.toolCallIds[i],
      name: tc.name,
      arguments: tc.argumentsText,
    });
  });
  return items;
}

export function responseObject(c: ResponseHead, body: Record<string, unknown>, status: string, output: unknown[], createdAt: number): Record<string, unknown> {
  const done = status !== "in_progress";
  return {
    id: makeId("resp_", c.callKey),
    object: "response",
    created_at: createdAt,
    status,
    model: c.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    tool_choice: body.tool_choice ?? "auto",
    tools: Array.isArray(body.tools) ? body.tools : [],
    store: body.store ?? false,
    usage: done
      ? {
          input_tokens: c.promptTokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: c.completionTokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: c.promptTokens + c.completionTokens,
        }
      : null,
    error: null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
  };
}

export function finalStatus(c: CanonicalCompletion): string {
  return c.finish === "length" ? "incomplete" : "completed";
}
