/**
 * Reading the model's output format (output-format.ts) while the completion is still being
 * written: raw text arrives in pieces, and out come the parts of the answer that are already
 * certain — reasoning and text deltas, and whole tool calls. A piece is released only once it is
 * known to be what `parseCompletion` will make of the finished text, so the pieces are always a
 * prefix of the final parse: text that could be the start of a marker (`<think>`, `</think>`,
 * `<tool_call>`) or a newline the parser would trim is held back until the next piece decides it.
 *
 * A tool call is released whole when its closing tag arrives (its arguments then read exactly as
 * the final parse reads them). Text written between or after tool calls, an unterminated tool
 * call and the trimmed tails come out of `finish`, which completes the pieces from the final parse.
 */
import { type OutputFormat, type ParsedCompletion, type ParsedToolCall, parseToolCallBody, TOOL_CLOSE, TOOL_OPEN } from "./output-format.js";

export type OutputPiece = { kind: "reasoning"; text: string } | { kind: "text"; text: string } | { kind: "tool"; call: ParsedToolCall };

type Mode = "start" | "reasoning" | "after-reasoning" | "text" | "tool" | "between";

export class OutputStream {
  private mode: Mode;
  /** Raw text of the current section not released yet. */
  private buf = "";
  /** Reasoning only: the newline after the start marker is still to be dropped. */
  private leadingNewline = true;
  private reasoningOut = "";
  private textOut = "";
  private toolsOut = 0;
  /** Tool mode: where the search for the closing tag resumes (a long call is not scanned again). */
  private toolScanned = 0;
  /** Set when the final parse does not extend what was released (see `finish`). */
  diverged = false;

  constructor(private readonly format: OutputFormat) {
    this.mode = format.reasoning ? "start" : "text";
  }

  /** Feed the next raw text; returns the pieces it makes certain. */
  push(text: string): OutputPiece[] {
    if (text.length === 0) return [];
    this.buf += text;
    const out: OutputPiece[] = [];
    for (;;) {
      const before = this.mode;
      this.step(out);
      if (this.mode === before) return out;
    }
  }

  /** The completion ended and `parsed` is its final parse: the pieces still missing, in answer order. */
  finish(parsed: ParsedCompletion): OutputPiece[] {
    const out: OutputPiece[] = [];
    this.buf = "";
    this.mode = "between";
    const extend = (done: string, full: string): string => {
      if (full.startsWith(done)) return full.slice(done.length);
      this.diverged = true;
      return "";
    };
    const reasoning = extend(this.reasoningOut, parsed.reasoning);
    if (reasoning) out.push({ kind: "reasoning", text: reasoning });
    const text = extend(this.textOut, parsed.text);
    if (text) out.push({ kind: "text", text });
    for (let i = this.toolsOut; i < parsed.toolCalls.length; i++) out.push({ kind: "tool", call: parsed.toolCalls[i]! });
    this.reasoningOut = parsed.reasoning;
    this.textOut = parsed.text;
    this.toolsOut = Math.max(this.toolsOut, parsed.toolCalls.length);
    return out;
  }

  private step(out: OutputPiece[]): void {
    switch (this.mode) {
      case "start":
        return this.readStart();
      case "reasoning":
        return this.readReasoning(out);
      case "after-reasoning":
        return this.readAfterReasoning();
      case "text":
        return this.readText(out);
      case "tool":
        return this.readTool(out);
      case "between":
        return this.readBetween();
    }
  }

  /** Before anything else: the reasoning start marker, possibly after whitespace — or plain text. */
  private readStart(): void {
    const start = this.format.reasoning!.start;
    const t = this.buf.trimStart();
    if (t.length === 0 || (t.length < start.length && start.startsWith(t))) return;
    if (t.startsWith(start)) {
      this.buf = t.slice(start.length);
      this.mode = "reasoning";
    } else this.mode = "text";
  }

  private readReasoning(out: OutputPiece[]): void {
    if (this.leadingNewline) {
      if (this.buf.length === 0) return;
      if (this.buf.startsWith("\n")) this.buf = this.buf.slice(1);
      this.leadingNewline = false;
    }
    const end = this.format.reasoning!.end;
    const at = this.buf.indexOf(end);
    if (at >= 0) {
      this.emit(out, "reasoning", dropNewline(this.buf.slice(0, at)));
      this.buf = this.buf.slice(at + end.length);
      this.mode = "after-reasoning";
      return;
    }
    this.release(out, "reasoning", end);
  }

  /** After the end marker the parser drops "\n\n", or else every leading newline. */
  private readAfterReasoning(): void {
    if (this.buf.startsWith("\n\n")) this.buf = this.buf.slice(2);
    else if (/[^\n]/.test(this.buf)) this.buf = this.buf.replace(/^\n+/, "");
    else return;
    this.mode = "text";
  }

  private readText(out: OutputPiece[]): void {
    if (this.format.toolCallFormat === "none") {
      this.emit(out, "text", this.buf);
      this.buf = "";
      return;
    }
    const at = this.buf.indexOf(TOOL_OPEN);
    if (at >= 0) {
      this.emit(out, "text", dropNewline(this.buf.slice(0, at)));
      this.buf = this.buf.slice(at + TOOL_OPEN.length);
      this.mode = "tool";
      return;
    }
    this.release(out, "text", TOOL_OPEN);
  }

  private readTool(out: OutputPiece[]): void {
    const at = this.buf.indexOf(TOOL_CLOSE, this.toolScanned);
    if (at < 0) {
      this.toolScanned = Math.max(0, this.buf.length - TOOL_CLOSE.length + 1);
      return;
    }
    this.toolScanned = 0;
    out.push({ kind: "tool", call: parseToolCallBody(this.buf.slice(0, at)).call });
    this.toolsOut++;
    this.buf = this.buf.slice(at + TOOL_CLOSE.length);
    this.mode = "between";
  }

  /** Text after a tool call is joined into the answer's text by the final parse: held for `finish`. */
  private readBetween(): void {
    const at = this.buf.indexOf(TOOL_OPEN);
    if (at < 0) {
      const keep = partialMarker(this.buf, TOOL_OPEN);
      this.buf = this.buf.slice(this.buf.length - keep);
      return;
    }
    this.buf = this.buf.slice(at + TOOL_OPEN.length);
    this.mode = "tool";
  }

  /** Release the buffer but for a possible partial `marker` at its end and one newline before it. */
  private release(out: OutputPiece[], kind: "reasoning" | "text", marker: string): void {
    let safe = this.buf.length - partialMarker(this.buf, marker);
    if (safe > 0 && this.buf[safe - 1] === "\n") safe--;
    if (safe <= 0) return;
    this.emit(out, kind, this.buf.slice(0, safe));
    this.buf = this.buf.slice(safe);
  }

  private emit(out: OutputPiece[], kind: "reasoning" | "text", text: string): void {
    if (text.length === 0) return;
    if (kind === "reasoning") this.reasoningOut += text;
    else this.textOut += text;
    out.push({ kind, text });
  }
}

/** The length of the longest end of `s` that is a proper beginning of `marker`. */
function partialMarker(s: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, s.length); n > 0; n--) if (s.endsWith(marker.slice(0, n))) return n;
  return 0;
}

function dropNewline(s: string): string {
  return s.endsWith("\n") ? s.slice(0, -1) : s;
}
