/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`), streaming and not.
 * Reasoning goes out as `reasoning_content` (vLLM/SGLang style); tool-call arguments are sent as
 * the model wrote them, valid JSON or not.
 */
import type { CanonicalCompletion, CanonicalMessage, CanonicalTool, ParsedRequest, SseEvent } from "../canonical.js";
import { chunkArguments, chunkText, makeId, nowSeconds } from "../ids.js";
import type { OutputPiece } from "../../model/output-stream.js";
import { contentText, type DialectHandler, type DialectStream, ERROR_STATUS, isRecord, type ProxyErrorKind, type StreamHead } from "./dialect.js";

function parseRequest(body: unknown): ParsedRequest {
  if (!isRecord(body)) return { ok: false, message: "the request body must be a JSON object" };
  if (!Array.isArray(body.messages)) return { ok: false, message: "messages: an array of messages is required" };
  let system: string | undefined;
  const messages: CanonicalMessage[] = [];
  for (const [i, m] of body.messages.entries()) {
    if (!isRecord(m) || typeof m.role !== "string") return { ok: false, message: `messages[${i}]: a message needs a role` };
    switch (m.role) {
      case "system":
      case "developer":
        if (i === 0) system = contentText(m.content);
        else messages.push({ role: "system", content: contentText(m.content) });
        break;
      case "user":
        messages.push({ role: "user", content: contentText(m.content) });
        break;
      case "assistant": {
        const reasoning = typeof m.reasoning_content === "string" ? m.reasoning_content : typeof m.reasoning === "string" ? m.reasoning : undefined;
        const toolCalls = (Array.isArray(m.tool_calls) ? m.tool_calls : []).filter(isRecord).map((tc, j) => {
          const fn = isRecord(tc.function) ? tc.function : {};
          const args = fn.arguments;
          return {
            id: typeof tc.id === "string" ? tc.id : `call_${i}_${j}`,
            name: typeof fn.name === "string" ? fn.name : "",
            arguments: typeof args === "string" ? args : JSON.stringify(args ?? {}),
          };
        });
        const msg: CanonicalMessage = { role: "assistant", content: contentText(m.content, ""), toolCalls };
        if (reasoning !== undefined) msg.reasoning = reasoning;
        messages.push(msg);
        break;
      }
      case "tool":
      case "function": {
        const msg: CanonicalMessage = {
          role: "tool",
          toolCallId: typeof m.tool_call_id === "string" ? m.tool_call_id : "",
          content: contentText(m.content),
        };
        if (typeof m.name === "string") msg.name = m.name;
        messages.push(msg);
        break;
      }
      default:
        return { ok: false, message: `messages[${i}].role: unknown role ${JSON.stringify(m.role)}` };
    }
  }
  const tools: CanonicalTool[] = [];
  for (const t of Array.isArray(body.tools) ? body.tools : []) {
    const fn = isRecord(t) && isRecord(t.function) ? t.function : isRecord(t) ? t : undefined;
    if (!fn || typeof fn.name !== "string") continue;
    const tool: CanonicalTool = { name: fn.name, parameters: fn.parameters ?? { type: "object", properties: {} } };
    if (typeof fn.description === "string") tool.description = fn.description;
    tools.push(tool);
  }
  const maxTokens = numberOr(body.max_completion_tokens) ?? numberOr(body.max_tokens);
  const request = { dialect: "openai-chat" as const, model: typeof body.model === "string" ? body.model : "", stream: body.stream === true, messages, tools };
  return { ok: true, request: { ...request, ...(system !== undefined ? { system } : {}), ...(maxTokens !== undefined ? { maxTokens } : {}) } };
}

function numberOr(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : undefined;
}

function toolCallsOf(c: CanonicalCompletion): Record<string, unknown>[] {
  return c.parsed.toolCalls.map((tc, i) => ({
    id: c.toolCallIds[i],
    type: "function",
    function: { name: tc.name, arguments: tc.argumentsText },
  }));
}

function usageOf(c: CanonicalCompletion): Record<string, number> {
  return { prompt_tokens: c.promptTokens, completion_tokens: c.completionTokens, total_tokens: c.promptTokens + c.completionTokens };
}

function buildResponse(c: CanonicalCompletion): unknown {
  const message: Record<string, unknown> = { role: "assistant", content: c.parsed.text || (c.parsed.toolCalls.length > 0 ? null : "") };
  if (c.parsed.reasoning) message.reasoning_content = c.parsed.reasoning;
  if (c.parsed.toolCalls.length > 0) message.tool_calls = toolCallsOf(c);
  return {
    id: makeId("chatcmpl-", c.callKey),
    object: "chat.completion",
    created: nowSeconds(),
    model: c.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: c.finish }],
    usage: usageOf(c),
  };
}

function buildEvents(c: CanonicalCompletion, body: Record<string, unknown>): SseEvent[] {
  const stream = openStream({ callKey: c.callKey, model: c.model, promptTokens: c.promptTokens, toolCallId: (i) => c.toolCallIds[i]! }, body);
  const events = stream.open();
  if (c.parsed.reasoning) events.push(...stream.push({ kind: "reasoning", text: c.parsed.reasoning }));
  if (c.parsed.text) events.push(...stream.push({ kind: "text", text: c.parsed.text }));
  for (const call of c.parsed.toolCalls) events.push(...stream.push({ kind: "tool", call }));
  events.push(...stream.end(c));
  return events;
}

/**
 * The chunk events of one answer, written as JSON text: the fields every chunk repeats are
 * serialized once per answer (the bytes are those of JSON.stringify of the whole chunk).
 */
function chunkWriter(id: string, created: number, model: string, includeUsage: boolean): (delta: Record<string, unknown>, finish?: string | null) => SseEvent {
  const head = `{"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":[{"index":0,"delta":`;
  const usage = includeUsage ? `,"usage":null` : "";
  return (delta, finish = null) => ({ data: `${head}${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]${usage}}` });
}

/** The live form of `buildEvents`: a role chunk, a chunk per released piece, the finish chunk, usage, [DONE]. */
function openStream(head: StreamHead, body: Record<string, unknown>): DialectStream {
  const id = makeId("chatcmpl-", head.callKey);
  const created = nowSeconds();
  const includeUsage = isRecord(body.stream_options) && body.stream_options.include_usage === true;
  const chunk = chunkWriter(id, created, head.model, includeUsage);
  let tools = 0;
  return {
    open: () => [chunk({ role: "assistant", content: "" })],
    push(piece: OutputPiece): SseEvent[] {
      if (piece.kind === "reasoning") return chunkText(piece.text).map((p) => chunk({ reasoning_content: p }));
      if (piece.kind === "text") return chunkText(piece.text).map((p) => chunk({ content: p }));
      const i = tools++;
      const events = [chunk({ tool_calls: [{ index: i, id: head.toolCallId(i), type: "function", function: { name: piece.call.name, arguments: "" } }] })];
      chunkArguments(piece.call.argumentsText).forEach((p, j) => {
        const ev = chunk({ tool_calls: [{ index: i, function: { arguments: p } }] });
        if (j === 0) ev.midToolCall = true;
        events.push(ev);
      });
      return events;
    },
    end(c: CanonicalCompletion): SseEvent[] {
      const events = [chunk({}, c.finish)];
      if (includeUsage) events.push({ data: { id, object: "chat.completion.chunk", created, model: head.model, choices: [], usage: usageOf(c) } });
      events.push({ data: "[DONE]" });
      return events;
    },
  };
}

const ERROR_TYPE: Record<ProxyErrorKind, { type: string; code: string | null }> = {
  auth: { type: "invalid_request_error", code: "invalid_api_key" },
  "bad-request": { type: "invalid_request_error", code: null },
  "context-length": { type: "invalid_request_error", code: "context_length_exceeded" },
  "not-found": { type: "invalid_request_error", code: "unknown_url" },
  "too-large": { type: "invalid_request_error", code: "request_too_large" },
  timeout: { type: "invalid_request_error", code: "request_timeout" },
  "too-many-requests": { type: "requests", code: "rate_limit_exceeded" },
  "unsupported-media": { type: "invalid_request_error", code: "unsupported_content_encoding" },
  engine: { type: "server_error", code: "engine_error" },
  internal: { type: "server_error", code: null },
};

export function openAIError(kind: ProxyErrorKind, message: string): { status: number; body: unknown } {
  const t = ERROR_TYPE[kind];
  return { status: ERROR_STATUS[kind], body: { error: { message, type: t.type, param: null, code: t.code } } };
}

export const openaiChat: DialectHandler = {
  name: "openai-chat",
  parseRequest,
  toolCallId: (seed) => makeId("call_", `tool:${seed}`),
  buildResponse,
  buildEvents,
  openStream,
  errorResponse: openAIError,
  streamError: (kind, message) => [{ data: openAIError(kind, message).body }, { data: "[DONE]" }],
};
