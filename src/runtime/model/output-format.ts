/**
 * The model's output format (qwen3 / hermes): how one assistant turn looks as raw completion text.
 *
 *   <think>\n{reasoning}\n</think>\n\n{text}\n<tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
 *
 * `renderTurn` writes a turn in that format (the scripted engine uses it), `parseCompletion` reads
 * raw completion text back into reasoning, text and tool calls, reporting malformed output instead
 * of throwing. The rendering matches what the Qwen3 chat template writes for an assistant turn, so
 * a parsed turn round-trips: parseCompletion(renderTurn(t)) gives t back.
 */
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { toPythonJson } from "./python-json.js";

export interface OutputFormat {
  toolCallFormat: ResolvedModel["toolCallFormat"];
  reasoning: ResolvedModel["reasoning"];
}

export interface TurnSpec {
  reasoning?: string;
  text?: string;
  toolCalls?: { name: string; arguments: Record<string, unknown> | string }[];
}

export interface ParsedToolCall {
  name: string;
  /** The arguments exactly as the model wrote them (JSON text, possibly invalid or partial). */
  argumentsText: string;
  /** Parsed arguments when `argumentsText` is a JSON object. */
  arguments?: Record<string, unknown>;
}

export type ParseError = "invalid-tool-json" | "unterminated-tool-call";

export interface ParsedCompletion {
  reasoning: string;
  text: string;
  toolCalls: ParsedToolCall[];
  error?: ParseError;
  detail?: string;
}

export const TOOL_OPEN = "<tool_call>";
export const TOOL_CLOSE = "</tool_call>";

/** Raw completion text for one turn (without the stop token). */
export function renderTurn(turn: TurnSpec, format: OutputFormat): string {
  let out = "";
  if (format.reasoning && turn.reasoning !== undefined) {
    out += `${format.reasoning.start}\n${turn.reasoning}\n${format.reasoning.end}\n\n`;
  }
  const text = turn.text ?? "";
  out += text;
  const calls = turn.toolCalls ?? [];
  if (calls.length > 0 && format.toolCallFormat === "none") {
    throw new Error("renderTurn: tool calls need a toolCallFormat other than none");
  }
  calls.forEach((call, i) => {
    if (i > 0 || text.length > 0) out += "\n";
    const args = typeof call.arguments === "string" ? call.arguments : toPythonJson(call.arguments);
    out += `${TOOL_OPEN}\n{"name": ${JSON.stringify(call.name)}, "arguments": ${args}}\n${TOOL_CLOSE}`;
  });
  return out;
}

/** Parse raw completion text (stop token already removed). */
export function parseCompletion(raw: string, format: OutputFormat): ParsedCompletion {
  const { reasoning, rest } = splitReasoning(raw, format.reasoning);
  if (format.toolCallFormat === "none") return { reasoning, text: rest, toolCalls: [] };
  return { reasoning, ...splitToolCalls(rest) };
}

function splitReasoning(raw: string, markers: OutputFormat["reasoning"]): { reasoning: string; rest: string } {
  if (!markers) return { reasoning: "", rest: raw };
  const start = raw.indexOf(markers.start);
  const end = raw.indexOf(markers.end);
  const startsHere = start >= 0 && raw.slice(0, start).trim() === "";
  if (end >= 0 && (start < 0 || start < end) && (start < 0 || startsHere)) {
    const from = start >= 0 ? start + markers.start.length : 0;
    const reasoning = trimOneNewline(raw.slice(from, end));
    let rest = raw.slice(end + markers.end.length);
    rest = rest.startsWith("\n\n") ? rest.slice(2) : rest.replace(/^\n+/, "");
    return { reasoning, rest };
  }
  if (startsHere && end < 0) {
    // reasoning that never closed (cut by the token limit)
    return { reasoning: trimOneNewline(raw.slice(start + markers.start.length)), rest: "" };
  }
  return { reasoning: "", rest: raw };
}

function trimOneNewline(s: string): string {
  let out = s.startsWith("\n") ? s.slice(1) : s;
  if (out.endsWith("\n")) out = out.slice(0, -1);
  return out;
}

function splitToolCalls(s: string): Omit<ParsedCompletion, "reasoning"> {
  const first = s.indexOf(TOOL_OPEN);
  if (first < 0) return { text: s, toolCalls: [] };
  let text = s.slice(0, first);
  if (text.endsWith("\n")) text = text.slice(0, -1);
  const toolCalls: ParsedToolCall[] = [];
  let error: ParseError | undefined;
  let detail: string | undefined;
  let pos = first;
  while (pos >= 0 && pos < s.length) {
    const bodyStart = pos + TOOL_OPEN.length;
    const close = s.indexOf(TOOL_CLOSE, bodyStart);
    const body = s.slice(bodyStart, close < 0 ? s.length : close);
    const call = parseToolCallBody(body);
    toolCalls.push(call.call);
    if (close < 0) {
      error = "unterminated-tool-call";
      detail ??= `tool call ${toolCalls.length} has no ${TOOL_CLOSE}`;
      break;
    }
    if (call.error && !error) {
      error = call.error;
      detail = `tool call ${toolCalls.length}: ${call.detail}`;
    }
    const after = close + TOOL_CLOSE.length;
    const next = s.indexOf(TOOL_OPEN, after);
    const between = s.slice(after, next < 0 ? s.length : next);
    if (between.trim() !== "") text += (text ? "\n" : "") + between.trim();
    pos = next;
  }
  const out: Omit<ParsedCompletion, "reasoning"> = { text, toolCalls };
  if (error) {
    out.error = error;
    if (detail) out.detail = detail;
  }
  return out;
}

export function parseToolCallBody(body: string): { call: ParsedToolCall; error?: ParseError; detail?: string } {
  const trimmed = body.trim();
  try {
    const obj = JSON.parse(trimmed) as { name?: unknown; arguments?: unknown };
    if (obj && typeof obj === "object" && typeof obj.name === "string") {
      const raw = rawArgumentsOf(trimmed);
      let args = obj.arguments;
      if (typeof args === "string") {
        // some models write the arguments as a JSON string
        try {
          args = JSON.parse(args);
        } catch {
          /* keep as is */
        }
      }
      if (args && typeof args === "object" && !Array.isArray(args)) {
        const argumentsText = raw !== undefined && safeParse(raw) !== undefined ? raw : JSON.stringify(args);
        return { call: { name: obj.name, argumentsText, arguments: args as Record<string, unknown> } };
      }
      const text = typeof obj.arguments === "string" ? obj.arguments : JSON.stringify(obj.arguments ?? {});
      return {
        call: { name: obj.name, argumentsText: text },
        error: "invalid-tool-json",
        detail: "arguments are not a JSON object",
      };
    }
  } catch {
    // fall through to the best-effort reading below
  }
  const name = /"name"\s*:\s*"((?:[^"\\]|\\.)*)"/.exec(trimmed)?.[1] ?? "";
  let raw = rawArgumentsOf(trimmed) ?? "";
  const parsed = safeParse(raw);
  if (parsed === undefined && raw.endsWith("}") && count(raw, "}") > count(raw, "{")) raw = raw.slice(0, -1).trimEnd();
  const args = safeParse(raw);
  const call: ParsedToolCall = { name: unescapeJsonString(name), argumentsText: raw };
  if (args && typeof args === "object" && !Array.isArray(args)) call.arguments = args as Record<string, unknown>;
  return { call, error: "invalid-tool-json", detail: "tool call is not valid JSON" };
}

/** The text after `"arguments":` up to the closing brace of the envelope. */
function rawArgumentsOf(body: string): string | undefined {
  const m = /"arguments"\s*:\s*/.exec(body);
  if (!m) return undefined;
  let raw = body.slice(m.index + m[0].length).trimEnd();
  if (raw.endsWith("}")) {
    const inner = raw.slice(0, -1).trimEnd();
    // the envelope's brace closes only if the inner part balances on its own
    if (count(inner, "{") === count(inner, "}") || safeParse(inner) !== undefined) raw = inner;
  }
  return raw;
}

function safeParse(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

function count(s: string, ch: string): number {
  let n = 0;
  for (const c of s) if (c === ch) n++;
  return n;
}

function unescapeJsonString(s: string): string {
  try {
    return JSON.parse(`"${s}"`) as string;
  } catch {
    return s;
  }
}
