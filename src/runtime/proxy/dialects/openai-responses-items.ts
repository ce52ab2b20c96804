/** The output items and response object of an OpenAI Responses answer, shared by the whole and the live stream. */
import type { CanonicalCompletion } from "../canonical.js";
import { makeId, makeReasoningToken } from "../ids.js";
import { isRecord } from "./dialect.js";

/** What a response object shows of its completion (usage only once it is done). */
export type ResponseHead = Pick<CanonicalCompletion, "callKey" | "model" | "promptTokens" | "completionTokens">;

/**
 * The flat name the model sees for a tool inside a `namespace` tool (Codex groups an MCP server's
 * tools as namespace `mcp__search` holding `search`): namespace + "__" + name, `mcp__search__search`.
 * A namespace that already ends in "__" is joined as is.
 */
export function namespacedName(namespace: string, name: string): string {
  return namespace.endsWith("__") ? namespace + name : `${namespace}__${name}`;
}

/** How a tool the model calls by its flat name goes back to the client: its kind, and its namespace and own name when it has one. */
export interface ToolRoute {
  custom: boolean;
  name: string;
  namespace?: string;
}

/** Every tool of the request by the flat name the model calls it by (tools inside a namespace under {@link namespacedName}). */
export function toolRoutes(body: Record<string, unknown>): Map<string, ToolRoute> {
  const routes = new Map<string, ToolRoute>();
  for (const t of Array.isArray(body.tools) ? body.tools : []) {
    if (!isRecord(t) || typeof t.name !== "string") continue;
    if (t.type === "namespace" && Array.isArray(t.tools)) {
      for (const inner of t.tools) {
        if (isRecord(inner) && typeof inner.name === "string")
          routes.set(namespacedName(t.name, inner.name), { custom: inner.type === "custom", name: inner.name, namespace: t.name });
      }
    } else routes.set(t.name, { custom: t.type === "custom", name: t.name });
  }
  return routes;
}

/** A tool call item as the client expects it: a custom tool's `input` or a function's `arguments`, under the tool's own name and namespace. */
export function toolCallItem(
  id: string,
  callId: string,
  call: { name: string; arguments?: Record<string, unknown> | null; argumentsText: string },
  route: ToolRoute | undefined,
): Record<string, unknown> {
  const named = route ? { name: route.name, ...(route.namespace !== undefined ? { namespace: route.namespace } : {}) } : { name: call.name };
  if (route?.custom) {
    const input = typeof call.arguments?.input === "string" ? call.arguments.input : call.argumentsText;
    return { id, type: "custom_tool_call", status: "completed", call_id: callId, ...named, input };
  }
  return { id, type: "function_call", status: "completed", call_id: callId, ...named, arguments: call.argumentsText };
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
    if (wantsEncrypted(body)) item.encrypted_content = makeReasoningToken(c.callKey);
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
  const routes = toolRoutes(body);
  c.parsed.toolCalls.forEach((tc, i) => {
    const route = routes.get(tc.name);
    items.push(toolCallItem(makeId(route?.custom ? "ctc_" : "fc_", `${c.callKey}:fc:${i}`), c.toolCallIds[i]!, tc, route));
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
