/**
 * Decoding completion ids as they arrive: each push returns the text the new ids add. A character
 * whose bytes span several tokens is held until it is whole (a byte-level tokenizer decodes half
 * of it as U+FFFD); each step decodes a small window with one step of context before it (whose
 * text the step before computed), so the cost per token stays constant. A trailing stop id is not text and is held back: the completion
 * ends on it (the final parse drops it the same way).
 */
import type { Tokenizer } from "./tokenizer.js";

/** A window that still ends in U+FFFD after this many ids is released anyway (invalid bytes). */
const MAX_HELD_IDS = 8;

export class TokenTextStream {
  private readonly ids: number[] = [];
  private prefixOffset = 0;
  private readOffset = 0;
  /** The text the last step added, and the ids it came from: the next step's context. */
  private lastText = "";
  private lastFrom = 0;
  private lastTo = 0;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly stopIds: ReadonlySet<number>,
  ) {}

  push(ids: readonly number[]): string {
    for (const id of ids) this.ids.push(id);
    let upTo = this.ids.length;
    if (upTo > 0 && this.stopIds.has(this.ids[upTo - 1]!)) upTo--;
    if (upTo <= this.readOffset) return "";
    const full = this.tokenizer.decode(this.ids.slice(this.prefixOffset, upTo));
    let prefix = this.textOf(this.prefixOffset, this.readOffset);
    // a tokenizer that decodes a window's first token differently (a leading-space marker): decode the context alone
    if (!full.startsWith(prefix)) prefix = this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    if (full.length <= prefix.length || !full.startsWith(prefix)) return "";
    if (full.endsWith("\uFFFD") && upTo - this.readOffset < MAX_HELD_IDS) return "";
    this.prefixOffset = this.readOffset;
    this.readOffset = upTo;
    this.lastText = full.slice(prefix.length);
    this.lastFrom = this.prefixOffset;
    this.lastTo = upTo;
    return this.lastText;
  }

  /** The text of ids[from, to): the last step's new text when that is the range, else decoded. */
  private textOf(from: number, to: number): string {
    if (from === this.lastFrom && to === this.lastTo) return this.lastText;
    return this.tokenizer.decode(this.ids.slice(from, to));
  }
}
