/**
 * One API dialect: request → canonical conversation, canonical completion → response JSON and
 * SSE events, and errors in the dialect's own shape. One file per dialect, registered by name.
 */
import type { Dialect } from "../../../compiler/contract/plan.js";
import type { OutputPiece } from "../../model/output-stream.js";
import type { CanonicalCompletion, ParsedRequest, SseEvent } from "../canonical.js";

export type ProxyErrorKind =
  | "auth"
  | "bad-request"
  | "context-length"
  | "not-found"
  | "too-large"
  | "timeout"
  | "too-many-requests"
  | "unsupported-media"
  | "engine"
  | "internal";

export interface DialectHandler {
  readonly name: Dialect;
  parseRequest(body: unknown): ParsedRequest;
  /** The id issued for the i-th tool call of a call (seed = "<rollout>:<seq>:<i>"). */
  toolCallId(seed: string): string;
  /** Non-streaming response body. `body` is the request body as received. */
  buildResponse(completion: CanonicalCompletion, body: Record<string, unknown>): unknown;
  /** The full SSE event sequence of a streaming response. */
  buildEvents(completion: CanonicalCompletion, body: Record<string, unknown>): SseEvent[];
  /** A streaming response written while the engine generates: the same events, piece by piece. */
  openStream(head: StreamHead, body: Record<string, unknown>): DialectStream;
  /** An error answered before streaming started. */
  errorResponse(kind: ProxyErrorKind, message: string): { status: number; body: unknown };
  /** An error reported inside an SSE stream that already started. */
  streamError(kind: ProxyErrorKind, message: string): SseEvent[];
}

/** What a live stream knows before the first token: enough for its opening events. */
export interface StreamHead {
  callKey: string;
  model: string;
  promptTokens: number;
  /** The id of the i-th tool call (the ids the finished completion will carry). */
  toolCallId(i: number): string;
}

/**
 * A streaming response in the making: `open` events first, then the events of each released piece
 * of the completion, then `end` with the finished completion (its remaining pieces already pushed).
 */
export interface DialectStream {
  open(): SseEvent[];
  push(piece: OutputPiece): SseEvent[];
  end(completion: CanonicalCompletion): SseEvent[];
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** HTTP status per error kind (shared by all dialects). */
export const ERROR_STATUS: Record<ProxyErrorKind, number> = {
  auth: 401,
  "bad-request": 400,
  "context-length": 400,
  "not-found": 404,
  "too-large": 413,
  timeout: 408,
  "too-many-requests": 429,
  "unsupported-media": 415,
  engine: 500,
  internal: 500,
};

/** Text of OpenAI/Anthropic-style content: a string, or parts with `text` (images become placeholders). */
export function contentText(content: unknown, join = "\n"): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content === null || content === undefined ? "" : JSON.stringify(content);
  const parts: string[] = [];
  for (const part of content) {
    if (typeof part === "string") parts.push(part);
    else if (isRecord(part)) {
      if (typeof part.text === "string") parts.push(part.text);
      else if (typeof part.type === "string" && /image/.test(part.type)) parts.push("[image]");
      else if (typeof part.type === "string" && /file|document|audio/.test(part.type)) parts.push(`[${part.type}]`);
    }
  }
  return parts.join(join);
}
