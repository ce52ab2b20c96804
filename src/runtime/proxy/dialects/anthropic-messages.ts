/**
 * Anthropic Messages (`POST /v1/messages`), streaming and not.
 * Thinking blocks are sent only when the request enables thinking. A tool call whose arguments are
 * not valid JSON is streamed as the raw string in `input_json_delta` (as a real model's stream
 * would be); a non-streaming answer wraps it as `{"INVALID_JSON": "<raw>"}`.
 */
import type { CanonicalCompletion, CanonicalMessage, CanonicalTool, CanonicalToolCall, ParsedRequest, SseEvent } from "../canonical.js";
import { chunkArguments, chunkText, makeId, makeReasoningToken } from "../ids.js";
import type { OutputPiece } from "../../model/output-stream.js";
import { contentText, type DialectHandler, type DialectStream, ERROR_STATUS, isRecord, type ProxyErrorKind, type StreamHead } from "./dialect.js";

function parseRequest(body: unknown): ParsedRequest {
  if (!isRecord(body)) return { ok: false, message: "the request body must be a JSON object" };
  if (!Array.isArray(body.messages)) return { ok: false, message: "messages: Field required" };
  const messages: CanonicalMessage[] = [];
  for (const [i, m] of body.messages.entries()) {
    if (!isRecord(m) || typeof m.role !== "string") return { ok: false, message: `messages.${i}: a message needs a role` };
    if (m.role === "system") messages.push({ role: "system", content: contentText(m.content) });
    else if (m.role === "user") messages.push(...userMessages(m.content));
    else if (m.role === "assistant") messages.push(assistantMessage(m.content, i));
    else return { ok: false, message: `messages.${i}.role: unexpected role ${JSON.stringify(m.role)}` };
  }
  const tools: CanonicalTool[] = [];
  for (const t of Array.isArray(body.tools) ? body.tools : []) {
    if (!isRecord(t) || typeof t.name !== "string") continue;
    const tool: CanonicalTool = { name: t.name, parameters: t.input_schema ?? { type: "object", properties: {} } };
    if (typeof t.description === "string") tool.description = t.description;
    tools.push(tool);
  }
  const system = body.system === undefined || body.system === null ? undefined : contentText(body.system);
  const maxTokens = typeof body.max_tokens === "number" && body.max_tokens > 0 ? Math.floor(body.max_tokens) : undefined;
  return {
    ok: true,
    request: {
      dialect: "anthropic-messages",
      model: typeof body.model === "string" ? body.model : "",
      stream: body.stream === true,
      messages,
      tools,
      ...(system !== undefined ? { system } : {}),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
    },
  };
}

/** A user turn: tool results become tool messages; other blocks are joined into user text, in order. */
function userMessages(content: unknown): CanonicalMessage[] {
  if (!Array.isArray(content)) return [{ role: "user", content: contentText(content) }];
  const out: CanonicalMessage[] = [];
  let text: unknown[] = [];
  const flush = () => {
    if (text.length > 0) out.push({ role: "user", content: contentText(text) });
    text = [];
  };
  for (const block of content) {
    if (isRecord(block) && block.type === "tool_result") {
      flush();
      out.push({ role: "tool", toolCallId: typeof block.tool_use_id === "string" ? block.tool_use_id : "", content: contentText(block.content ?? "") });
    } else text.push(block);
  }
  flush();
  return out;
}

function assistantMessage(content: unknown, index: number): CanonicalMessage {
  if (!Array.isArray(content)) return { role: "assistant", content: contentText(content), toolCalls: [] };
  let text = "";
  let reasoning: string | undefined;
  const toolCalls: CanonicalToolCall[] = [];
  for (const [j, block] of content.entries()) {
    if (!isRecord(block)) continue;
    if (block.type === "text" && typeof block.text === "string") text += block.text;
    else if (block.type === "thinking" && typeof block.thinking === "string") reasoning = (reasoning ?? "") + block.thinking;
    else if (block.type === "tool_use" || block.type === "server_tool_use") {
      toolCalls.push({
        id: typeof block.id === "string" ? block.id : `toolu_${index}_${j}`,
        name: typeof block.name === "string" ? block.name : "",
        arguments: typeof block.input === "string" ? block.input : JSON.stringify(block.input ?? {}),
      });
    }
  }
  const msg: CanonicalMessage = { role: "assistant", content: text, toolCalls };
  if (reasoning !== undefined) msg.reasoning = reasoning;
  return msg;
}

function thinkingEnabled(body: Record<string, unknown>): boolean {
  return isRecord(body.thinking) && (body.thinking.type === "enabled" || body.thinking.type === "adaptive");
}

function stopReason(c: CanonicalCompletion): string {
  return c.finish === "length" ? "max_tokens" : c.finish === "tool_calls" ? "tool_use" : "end_turn";
}

function buildResponse(c: CanonicalCompletion, body: Record<string, unknown>): unknown {
  const content: Record<string, unknown>[] = [];
  if (c.parsed.reasoning && thinkingEnabled(body)) content.push({ type: "thinking", thinking: c.parsed.reasoning, signature: makeReasoningToken(c.callKey) });
  if (c.parsed.text) content.push({ type: "text", text: c.parsed.text });
  c.parsed.toolCalls.forEach((tc, i) => {
    content.push({ type: "tool_use", id: c.toolCallIds[i], name: tc.name, input: tc.arguments ?? { INVALID_JSON: tc.argumentsText } });
  });
  return {
    id: makeId("msg_", c.callKey),
    type: "message",
    role: "assistant",
    model: c.model,
    content,
    stop_reason: stopReason(c),
    stop_sequence: null,
    usage: { input_tokens: c.promptTokens, output_tokens: c.completionTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}

function buildEvents(c: CanonicalCompletion, body: Record<string, unknown>): SseEvent[] {
  const ev = (type: string, data: Record<string, unknown>): SseEvent => ({ event: type, data: { type, ...data } });
  const events: SseEvent[] = [
    ev("message_start", {
      message: {
        id: makeId("msg_", c.callKey),
        type: "message",
        role: "assistant",
        model: c.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: c.promptTokens, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
    }),
    ev("ping", {}),
  ];
  let index = 0;
  if (c.parsed.reasoning && thinkingEnabled(body)) {
    events.push(ev("content_block_start", { index, content_block: { type: "thinking", thinking: "", signature: "" } }));
    for (const piece of chunkText(c.parsed.reasoning)) events.push(ev("content_block_delta", { index, delta: { type: "thinking_delta", thinking: piece } }));
    events.push(ev("content_block_delta", { index, delta: { type: "signature_delta", signature: makeReasoningToken(c.callKey) } }));
    events.push(ev("content_block_stop", { index }));
    index++;
  }
  if (c.parsed.text) {
    events.push(ev("content_block_start", { index, content_block: { type: "text", text: "" } }));
    for (const piece of chunkText(c.parsed.text)) events.push(ev("content_block_delta", { index, delta: { type: "text_delta", text: piece } }));
    events.push(ev("content_block_stop", { index }));
    index++;
  }
  c.parsed.toolCalls.forEach((tc, i) => {
    events.push(ev("content_block_start", { index, content_block: { type: "tool_use", id: c.toolCallIds[i], name: tc.name, input: {} } }));
    chunkArguments(tc.argumentsText).forEach((piece, j) => {
      const e = ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: piece } });
      if (j === 0) e.midToolCall = true;
      events.push(e);
    });
    events.push(ev("content_block_stop", { index }));
    index++;
  });
  events.push(ev("message_delta", { delta: { stop_reason: stopReason(c), stop_sequence: null }, usage: { output_tokens: c.completionTokens } }));
  events.push(ev("message_stop", {}));
  return events;
}

/**
 * The live form of `buildEvents`: message_start and ping, then content blocks as the pieces come
 * (a block stops when the next one starts or the message ends), then message_delta, message_stop.
 */
function openStream(head: StreamHead, body: Record<string, unknown>): DialectStream {
  const ev = (type: string, data: Record<string, unknown>): SseEvent => ({ event: type, data: { type, ...data } });
  const thinking = thinkingEnabled(body);
  let index = -1;
  let open: "thinking" | "text" | "tool_use" | undefined;
  let tools = 0;
  const close = (events: SseEvent[]) => {
    if (open === "thinking") events.push(ev("content_block_delta", { index, delta: { type: "signature_delta", signature: makeReasoningToken(head.callKey) } }));
    if (open) events.push(ev("content_block_stop", { index }));
    open = undefined;
  };
  const start = (events: SseEvent[], block: Record<string, unknown>) => {
    close(events);
    index++;
    open = block.type as typeof open;
    events.push(ev("content_block_start", { index, content_block: block }));
  };
  return {
    open: () => [
      ev("message_start", {
        message: {
          id: makeId("msg_", head.callKey),
          type: "message",
          role: "assistant",
          model: head.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: head.promptTokens, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
        },
      }),
      ev("ping", {}),
    ],
    push(piece: OutputPiece): SseEvent[] {
      const events: SseEvent[] = [];
      if (piece.kind === "reasoning") {
        if (!thinking) return events;
        if (open !== "thinking") start(events, { type: "thinking", thinking: "", signature: "" });
        for (const p of chunkText(piece.text)) events.push(ev("content_block_delta", { index, delta: { type: "thinking_delta", thinking: p } }));
      } else if (piece.kind === "text") {
        if (open !== "text") start(events, { type: "text", text: "" });
        for (const p of chunkText(piece.text)) events.push(ev("content_block_delta", { index, delta: { type: "text_delta", text: p } }));
      } else {
        start(events, { type: "tool_use", id: head.toolCallId(tools++), name: piece.call.name, input: {} });
        chunkArguments(piece.call.argumentsText).forEach((p, j) => {
          const e = ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: p } });
          if (j === 0) e.midToolCall = true;
          events.push(e);
        });
      }
      return events;
    },
    end(c: CanonicalCompletion): SseEvent[] {
      const events: SseEvent[] = [];
      close(events);
      events.push(ev("message_delta", { delta: { stop_reason: stopReason(c), stop_sequence: null }, usage: { output_tokens: c.completionTokens } }));
      events.push(ev("message_stop", {}));
      return events;
    },
  };
}

const ERROR_TYPE: Record<ProxyErrorKind, string> = {
  auth: "authentication_error",
  "bad-request": "invalid_request_error",
  "context-length": "invalid_request_error",
  "not-found": "not_found_error",
  "too-large": "request_too_large",
  timeout: "invalid_request_error",
  "too-many-requests": "rate_limit_error",
  "unsupported-media": "invalid_request_error",
  engine: "api_error",
  internal: "api_error",
};

function errorBody(kind: ProxyErrorKind, message: string): Record<string, unknown> {
  return { type: "error", error: { type: ERROR_TYPE[kind], message } };
}

export const anthropicMessages: DialectHandler = {
  name: "anthropic-messages",
  parseRequest,
  toolCallId: (seed) => makeId("toolu_", `tool:${seed}`),
  buildResponse,
  buildEvents,
  openStream,
  errorResponse: (kind, message) => ({ status: ERROR_STATUS[kind], body: errorBody(kind, message) }),
  streamError: (kind, message) => [{ event: "error", data: errorBody(kind, message) }],
};
