/**
 * The limits on MCP traffic between a harness and its rollout's servers, and the capped form in
 * which it is recorded. A rollout's MCP calls pass through the runner (the relay), so an agent
 * that sends or asks for megabytes must meet a refusal it sees as its tool's result, never a
 * runner that runs out of buffer or memory:
 * - a tools/call whose arguments (as JSON, UTF-8) are over the server's `maxArgumentBytes` is
 *   refused without being forwarded (McpArgumentsTooLarge);
 * - a message the server writes (one JSON line) over its `maxResultBytes` is read no further than
 *   the limit and never parsed; the call it answers gets an error instead (McpResultTooLarge);
 * - an HTTP request body over `requestBodyLimit()` is answered 413 unread; a relay holds at most
 *   MAX_OPEN_REQUESTS open HTTP requests and MAX_SESSIONS sessions (McpTooManyRequests), and at
 *   most `inputBacklogLimit()` bytes waiting for a server that does not read (McpServerNotReading);
 * - records keep at most MAX_RECORDED_CHARS of a call's arguments and of its result (long strings
 *   cut, the original size kept in `truncated`), and a try records at most
 *   RECORDED_CHARS_PER_TRY of them in all; past it only sizes are kept.
 */

/** Default of an MCP server's `maxArgumentBytes`: the largest arguments of one tools/call. */
export const DEFAULT_MAX_ARGUMENT_BYTES = 1024 * 1024;
/** Default of an MCP server's `maxResultBytes`: the largest message (one JSON line) a server may write. */
export const DEFAULT_MAX_RESULT_BYTES = 4 * 1024 * 1024;
/** Open HTTP requests (answers not yet sent whole) one relay holds at once; more are answered 429. */
export const MAX_OPEN_REQUESTS = 32;
/** MCP sessions (initialize) one relay keeps; a new one past these is answered 429. */
export const MAX_SESSIONS = 16;
/** A recorded call keeps at most this many characters of its arguments and as many of its result. */
export const MAX_RECORDED_CHARS = 64 * 1024;
/** Strings of a large recorded value are cut to this many characters (so its small fields stay whole). */
const RECORDED_STRING_CHARS = 1024;
/** Characters of arguments and results one try records in all; past it a call keeps only sizes. */
export const RECORDED_CHARS_PER_TRY = 16 * 1024 * 1024;

/** The MCP request body reins reads at most: the arguments' limit with room for \u escapes and the envelope. */
export function requestBodyLimit(maxArgumentBytes: number): number {
  return 4 * maxArgumentBytes + 64 * 1024;
}

/** Bytes reins lets wait for a server to read them; a call past it is refused. */
export function inputBacklogLimit(maxArgumentBytes: number): number {
  return 8 * maxArgumentBytes;
}

/** The size of `value` as JSON in UTF-8 bytes, and its text; null when it cannot be written (too deep). */
export function jsonSize(value: unknown): { text: string; bytes: number } | null {
  try {
    const text = JSON.stringify(value ?? null);
    return { text, bytes: Buffer.byteLength(text) };
  } catch {
    return null;
  }
}

/** The form kept of a value too large to record whole: its size, its beginning, and whether it was a tool error. */
export interface CutValue {
  truncated: true;
  /** Its size as JSON, UTF-8 bytes. */
  bytes: number;
  /** The beginning of its JSON text. */
  start: string;
  isError?: true;
}

/** What a record keeps of a value: the value, or a cut form, with the original size when cut. */
export interface Kept {
  value: unknown;
  /** The original size (JSON, UTF-8 bytes) when the value was cut. */
  bytes?: number;
}

function cutStrings(value: unknown, depth: number): unknown {
  if (typeof value === "string")
    return value.length <= RECORDED_STRING_CHARS ? value : `${value.slice(0, RECORDED_STRING_CHARS)}…[cut: ${value.length} characters]`;
  if (value === null || typeof value !== "object" || depth > 32) return depth > 32 ? "…[cut: too deep]" : value;
  if (Array.isArray(value)) return value.map((v) => cutStrings(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutStrings(v, depth + 1)]));
}

function isToolError(value: unknown): boolean {
  return value !== null && typeof value === "object" && (value as { isError?: unknown }).isError === true;
}

/** The beginning of `text` whose JSON string (escapes included) is at most `maxChars` long. */
function startOf(text: string, maxChars: number): string {
  let start = text.slice(0, maxChars);
  for (let written = JSON.stringify(start).length - 2; written > maxChars; written = JSON.stringify(start).length - 2) {
    start = start.slice(0, Math.floor((start.length * maxChars) / written) - 1);
  }
  return start;
}

/** The flat cut form of a value (or of a message's raw text) of `bytes` bytes; its start, as JSON, within `maxChars`. */
export function cutValue(bytes: number, start: string, isError: boolean, maxChars = MAX_RECORDED_CHARS): CutValue {
  return { truncated: true, bytes, start: startOf(start, maxChars), ...(isError ? { isError: true as const } : {}) };
}

/**
 * What a call's record keeps of `value` within `maxChars`: the value itself when it fits; else the
 * value with every long string cut (its keys and small fields whole) when that fits; else the
 * flat cut form. A tool result's `isError` is always kept.
 */
export function recorded(value: unknown, maxChars = MAX_RECORDED_CHARS): Kept {
  const size = jsonSize(value);
  if (size && size.text.length <= maxChars) return { value };
  if (!size) return { value: cutValue(0, "", isToolError(value), maxChars), bytes: 0 };
  let shorter: ReturnType<typeof jsonSize> = null;
  try {
    shorter = jsonSize(cutStrings(value, 0));
  } catch {
    // too deep to walk: the flat form below
  }
  if (shorter && shorter.text.length <= maxChars) return { value: JSON.parse(shorter.text), bytes: size.bytes };
  return { value: cutValue(size.bytes, size.text, isToolError(value), maxChars), bytes: size.bytes };
}

/** The characters a try may still record: each kept value spends its length; once spent, values keep only their size. */
export class RecordBudget {
  constructor(private left = RECORDED_CHARS_PER_TRY) {}

  keep(value: unknown): Kept {
    const kept = this.left > 0 ? recorded(value) : undefined;
    const chars = kept ? (jsonSize(kept.value)?.text.length ?? 0) : 0;
    if (kept && chars <= this.left) {
      this.left -= chars;
      return kept;
    }
    this.left = 0;
    const size = jsonSize(value);
    return { value: cutValue(size?.bytes ?? 0, "", isToolError(value)), bytes: size?.bytes ?? 0 };
  }

  /** A value already cut (an answer too large to read): its start spends the budget like any kept text. */
  keepCut(cut: CutValue): Kept {
    const start = startOf(cut.start, Math.max(0, this.left));
    this.left = Math.max(0, this.left - JSON.stringify(start).length);
    return { value: { ...cut, start }, bytes: cut.bytes };
  }
}
