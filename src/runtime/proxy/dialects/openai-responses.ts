/**
 * OpenAI Responses (`POST /v1/responses`), streaming and not, for stateless clients (`store:false`):
 * the whole conversation arrives in `input`. Reasoning goes out as a reasoning item (summary +
 * `encrypted_content` when the request includes it); a completion cut by the token limit ends
 * with `response.incomplete`.
 */
import type { CanonicalCompletion, CanonicalMessage, CanonicalTool, ParsedRequest, SseEvent } from "../canonical.js";
import { chunkArguments, chunkText, makeId, nowSeconds } from "../ids.js";
import { contentText, type DialectHandler, isRecord, type ProxyErrorKind } from "./dialect.js";
import { openAIError } from "./openai-chat.js";
import { finalStatus, namespacedName, outputItems, responseObject } from "./openai-responses-items.js";
import { openResponsesStream } from "./openai-responses-stream.js";

type Assistant = Extract<CanonicalMessage, { role: "assistant" }>;

function parseRequest(body: unknown): ParsedRequest {
  if (!isRecord(body)) return { ok: false, message: "the request body must be a JSON object" };
  let system = typeof body.instructions === "string" ? body.instructions : undefined;
  const messages: CanonicalMessage[] = [];
  let turn: Assistant | undefined;
  const assistant = (): Assistant => {
    if (!turn) {
      turn = { role: "assistant", content: "", toolCalls: [] };
      messages.push(turn);
    }
    return turn;
  };
  const input = typeof body.input === "string" ? [{ role: "user", content: body.input }] : body.input;
  if (!Array.isArray(input)) return { ok: false, message: "input: a string or an array of items is required" };
  for (const [i, item] of input.entries()) {
    if (!isRecord(item)) return { ok: false, message: `input[${i}]: an item must be an object` };
    const type = typeof item.type === "string" ? item.type : item.role !== undefined ? "message" : "";
    switch (type) {
      case "message": {
        const role = item.role;
        if (role === "assistant") {
          if (turn && turn.toolCalls.length > 0) turn = undefined;
          const a = assistant();
          a.content += contentText(item.content, "");
        } else if (role === "system" || role === "developer") {
          turn = undefined;
          if (system === undefined && messages.length === 0) system = contentText(item.content);
          else messages.push({ role: "system", content: contentText(item.content) });
        } else if (role === "user") {
          turn = undefined;
          messages.push({ role: "user", content: contentText(item.content) });
        } else return { ok: false, message: `input[${i}].role: unexpected role ${JSON.stringify(role)}` };
        break;
      }
      case "reasoning": {
        if (turn && (turn.content || turn.toolCalls.length > 0)) turn = undefined;
        const a = assistant();
        const summary = Array.isArray(item.summary) ? contentText(item.summary) : "";
        const text = summary || (Array.isArray(item.content) ? contentText(item.content) : "");
        a.reasoning = (a.reasoning ?? "") + text;
        break;
      }
      case "function_call":
      case "custom_tool_call": {
        // a custom (freeform) tool's input is the `input` argument of the model's tool call
        const args = type === "custom_tool_call" ? { input: typeof item.input === "string" ? item.input : "" } : item.arguments;
        const name = typeof item.name === "string" ? item.name : "";
        assistant().toolCalls.push({
          id: typeof item.call_id === "string" ? item.call_id : typeof item.id === "string" ? item.id : `call_${i}`,
          // the model called a namespaced tool by its flat name; the client sends it back split
          name: typeof item.namespace === "string" && item.namespace ? namespacedName(item.namespace, name) : name,
          arguments: typeof args === "string" ? args : JSON.stringify(args ?? {}),
        });
        break;
      }
      case "function_call_output":
      case "custom_tool_call_output":
        turn = undefined;
        messages.push({ role: "tool", toolCallId: typeof item.call_id === "string" ? item.call_id : "", content: contentText(item.output ?? "") });
        break;
      default:
        // item_reference, built-in tool calls and the like carry nothing the model reads back
        break;
    }
  }
  const tools: CanonicalTool[] = [];
  const addTool = (t: unknown, namespace?: string) => {
    if (!isRecord(t)) return;
    if (t.type === "namespace") {
      if (Array.isArray(t.tools) && typeof t.name === "string") for (const inner of t.tools) addTool(inner, t.name);
      return;
    }
    const own = typeof t.name === "string" ? t.name : isRecord(t.function) && typeof t.function.name === "string" ? t.function.name : undefined;
    if (!own) return;
    const name = namespace !== undefined ? namespacedName(namespace, own) : own;
    const params = t.type === "custom" ? customToolParameters(t) : (t.parameters ?? (isRecord(t.function) ? t.function.parameters : undefined));
    const tool: CanonicalTool = { name, parameters: params ?? { type: "object", properties: {} } };
    const description = typeof t.description === "string" ? t.description : undefined;
    if (description !== undefined) tool.description = description;
    tools.push(tool);
  };
  for (const t of Array.isArray(body.tools) ? body.tools : []) addTool(t);
  const maxTokens = typeof body.max_output_tokens === "number" && body.max_output_tokens > 0 ? Math.floor(body.max_output_tokens) : undefined;
  return {
    ok: true,
    request: {
      dialect: "openai-responses",
      model: typeof body.model === "string" ? body.model : "",
      stream: body.stream === true,
      messages,
      tools,
      ...(system !== undefined ? { system } : {}),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
    },
  };
}

/** A custom (freeform) tool is offered to the model as a function with one string argument, `input`. */
function customToolParameters(t: Record<string, unknown>): unknown {
  const format =
    isRecord(t.format) && typeof t.format.definition === "string" ? ` Format (${String(t.format.syntax ?? "grammar")}):\n${t.format.definition}` : "";
  return { type: "object", properties: { input: { type: "string", description: `Freeform input.${format}` } }, required: ["input"] };
}

function buildResponse(c: CanonicalCompletion, body: Record<string, unknown>): unknown {
  return responseObject(c, body, finalStatus(c), outputItems(c, body), nowSeconds());
}

function buildEvents(c: CanonicalCompletion, body: Record<string, unknown>): SseEvent[] {
  const createdAt = nowSeconds();
  const events: SseEvent[] = [];
  const ev = (type: string, data: Record<string, unknown>): SseEvent => {
    const e: SseEvent = { event: type, data: { type, sequence_number: events.length, ...data } };
    events.push(e);
    return e;
  };
  ev("response.created", { response: responseObject(c, body, "in_progress", [], createdAt) });
  ev("response.in_progress", { response: responseObject(c, body, "in_progress", [], createdAt) });
  const items = outputItems(c, body);
  items.forEach((item, oi) => {
    const id = item.id as string;
    if (item.type === "reasoning") {
      const text = c.parsed.reasoning;
      ev("response.output_item.added", { output_index: oi, item: { id, type: "reasoning", summary: [] } });
      ev("response.reasoning_summary_part.added", { item_id: id, output_index: oi, summary_index: 0, part: { type: "summary_text", text: "" } });
      for (const piece of chunkText(text)) ev("response.reasoning_summary_text.delta", { item_id: id, output_index: oi, summary_index: 0, delta: piece });
      ev("response.reasoning_summary_text.done", { item_id: id, output_index: oi, summary_index: 0, text });
      ev("response.reasoning_summary_part.done", { item_id: id, output_index: oi, summary_index: 0, part: { type: "summary_text", text } });
    } else if (item.type === "message") {
      const text = c.parsed.text;
      ev("response.output_item.added", { output_index: oi, item: { ...item, status: "in_progress", content: [] } });
      ev("response.content_part.added", {
        item_id: id,
        output_index: oi,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [], logprobs: [] },
      });
      for (const piece of chunkText(text)) ev("response.output_text.delta", { item_id: id, output_index: oi, content_index: 0, delta: piece, logprobs: [] });
      ev("response.output_text.done", { item_id: id, output_index: oi, content_index: 0, text, logprobs: [] });
      ev("response.content_part.done", { item_id: id, output_index: oi, content_index: 0, part: { type: "output_text", text, annotations: [], logprobs: [] } });
    } else if (item.type === "custom_tool_call") {
      const input = item.input as string;
      ev("response.output_item.added", { output_index: oi, item: { ...item, status: "in_progress", input: "" } });
      chunkArguments(input).forEach((piece, j) => {
        const e = ev("response.custom_tool_call_input.delta", { item_id: id, output_index: oi, delta: piece });
        if (j === 0) e.midToolCall = true;
      });
      ev("response.custom_tool_call_input.done", { item_id: id, output_index: oi, input });
    } else {
      const args = item.arguments as string;
      ev("response.output_item.added", { output_index: oi, item: { ...item, status: "in_progress", arguments: "" } });
      chunkArguments(args).forEach((piece, j) => {
        const e = ev("response.function_call_arguments.delta", { item_id: id, output_index: oi, delta: piece });
        if (j === 0) e.midToolCall = true;
      });
      ev("response.function_call_arguments.done", { item_id: id, output_index: oi, arguments: args });
    }
    ev("response.output_item.done", { output_index: oi, item });
  });
  const status = finalStatus(c);
  ev(status === "incomplete" ? "response.incomplete" : "response.completed", { response: responseObject(c, body, status, items, createdAt) });
  return events;
}

function streamError(kind: ProxyErrorKind, message: string): SseEvent[] {
  const err = (openAIError(kind, message).body as { error: { code: string | null; type: string } }).error;
  return [
    { event: "error", data: { type: "error", code: err.code ?? err.type, message, param: null, sequence_number: 0 } },
    {
      event: "response.failed",
      data: {
        type: "response.failed",
        sequence_number: 1,
        response: { object: "response", status: "failed", output: [], error: { code: err.code ?? "server_error", message } },
      },
    },
  ];
}

export const openaiResponses: DialectHandler = {
  name: "openai-responses",
  parseRequest,
  toolCallId: (seed) => makeId("call_", `tool:${seed}`),
  buildResponse,
  buildEvents,
  openStream: openResponsesStream,
  errorResponse: openAIError,
  streamError,
};
