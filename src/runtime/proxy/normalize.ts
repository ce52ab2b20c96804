/**
 * Normalized forms used to recognise an assistant turn when a harness sends it back re-serialized:
 * text compared trimmed, tool calls by name + parsed arguments (key order ignored), reasoning
 * ignored (harnesses drop, trim or rewrite it), tool-call ids compared without punctuation
 * (OpenClaw strips `_`).
 */
import type { ParsedCompletion } from "../model/output-format.js";
import { toCanonicalJson } from "../model/python-json.js";
import type { CanonicalToolCall } from "./canonical.js";

/** Harness-side wrappers around arguments that were not valid JSON. */
function unwrapInvalid(obj: unknown): string | undefined {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) return undefined;
  const rec = obj as Record<string, unknown>;
  const keys = Object.keys(rec);
  if (keys.length === 1 && keys[0] === "INVALID_JSON" && typeof rec.INVALID_JSON === "string") return rec.INVALID_JSON;
  const unparsed = rec.__unparsedToolInput;
  if (keys.length === 1 && typeof unparsed === "object" && unparsed !== null) {
    const raw = (unparsed as Record<string, unknown>).raw;
    if (typeof raw === "string") return raw;
  }
  return undefined;
}

/** Arguments text → a form equal for equal JSON objects, or the trimmed raw text when not JSON. */
export function normalizeArguments(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return `raw:${text.trim()}`;
  }
  const unwrapped = unwrapInvalid(value);
  if (unwrapped !== undefined) return normalizeArguments(unwrapped);
  return `json:${toCanonicalJson(value)}`;
}

export function assistantKey(text: string, toolCalls: { name: string; arguments: string }[]): string {
  const calls = toolCalls.map((tc) => `${tc.name}\u0000${normalizeArguments(tc.arguments)}`);
  return JSON.stringify([text.trim(), calls]);
}

export function keyOfEcho(content: string, toolCalls: CanonicalToolCall[]): string {
  return assistantKey(content, toolCalls);
}

export function keyOfParsed(parsed: ParsedCompletion): string {
  return assistantKey(
    parsed.text,
    parsed.toolCalls.map((tc) => ({ name: tc.name, arguments: tc.arguments ? JSON.stringify(tc.arguments) : tc.argumentsText })),
  );
}

/** Tool-call ids compared without punctuation: `call_ab12` ≡ `callab12`. */
export function normalizeToolId(id: string): string {
  return id.replace(/[^A-Za-z0-9]/g, "");
}
