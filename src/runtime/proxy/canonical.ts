/**
 * The canonical conversation: what every dialect's request is translated into before rendering,
 * and the canonical completion every dialect's response is built from.
 */
import type { Dialect } from "../../compiler/contract/plan.js";
import type { ParsedCompletion } from "../model/output-format.js";

export interface CanonicalToolCall {
  /** The id the harness sent (may be rewritten from the id the proxy issued). */
  id: string;
  name: string;
  /** Arguments as JSON text: verbatim when the harness sent a string, serialized when it sent an object. */
  arguments: string;
}

export type CanonicalMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; reasoning?: string; toolCalls: CanonicalToolCall[] }
  | { role: "tool"; toolCallId: string; name?: string; content: string };

export interface CanonicalTool {
  name: string;
  description?: string;
  parameters: unknown;
}

export interface CanonicalRequest {
  dialect: Dialect;
  /** Model name the harness asked for. */
  model: string;
  stream: boolean;
  /** The leading system prompt (the template's header together with the tools). */
  system?: string;
  messages: CanonicalMessage[];
  tools: CanonicalTool[];
  /** The harness's token limit for the answer, if it set one. */
  maxTokens?: number;
}

export type CompletionFinish = "stop" | "tool_calls" | "length";

/** One finished completion, ready to be written in a dialect. */
export interface CanonicalCompletion {
  /** Response id seed, unique per call: "<rollout>:<seq>". */
  callKey: string;
  model: string;
  parsed: ParsedCompletion;
  finish: CompletionFinish;
  /** Ids issued for the tool calls, in order, in the dialect's id style. */
  toolCallIds: string[];
  promptTokens: number;
  completionTokens: number;
}

/** An SSE event; `midToolCall` marks an event inside a tool call, where a relayed broken stream is cut (call-answer.ts). */
export interface SseEvent {
  event?: string;
  data: unknown;
  midToolCall?: boolean;
}

/** Parse result of a dialect request. */
export type ParsedRequest = { ok: true; request: CanonicalRequest } | { ok: false; message: string };
