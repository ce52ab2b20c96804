/**
 * A byte scanner that measures a JSON text's nesting depth and value count as it arrives, so a
 * body built to make JSON.parse slow or huge (16 MB of `[[[[…`, a million object keys) is refused
 * before it is parsed. It does not validate JSON (JSON.parse does, afterwards); it only counts
 * brackets and separators outside strings. Resumable: feed the body chunk by chunk.
 */
export class JsonShape {
  depth = 0;
  /** Array elements and object members seen (commas + openings): an upper bound of the parser's work. */
  values = 0;
  private inString = false;
  private escaped = false;

  constructor(
    private readonly maxDepth: number,
    private readonly maxValues: number,
  ) {}

  /** Scan the next bytes; returns why the body is refused, or undefined while it is within the limits. */
  feed(chunk: Uint8Array): string | undefined {
    let { depth, values, inString, escaped } = this;
    const { maxDepth, maxValues } = this;
    const n = chunk.length;
    // Inside strings, jump from quote to backslash natively (indexOf) instead of byte by byte.
    let nextQuote = -1;
    let nextSlash = -1;
    let i = 0;
    while (i < n) {
      if (inString) {
        if (escaped) {
          escaped = false;
          i++;
          continue;
        }
        if (nextQuote < i) nextQuote = indexOr(chunk, 0x22, i, n);
        if (nextSlash < i) nextSlash = indexOr(chunk, 0x5c, i, n);
        if (nextSlash < nextQuote) {
          escaped = true;
          i = nextSlash + 1;
        } else if (nextQuote < n) {
          inString = false;
          i = nextQuote + 1;
        } else i = n;
        continue;
      }
      const c = chunk[i++]!;
      if (c === 0x22) inString = true;
      else if (c === 0x5b || c === 0x7b) {
        depth++;
        values++;
        if (depth > maxDepth) return this.stop(depth, values, `the request JSON nests deeper than ${maxDepth} levels`);
      } else if (c === 0x5d || c === 0x7d) depth--;
      else if (c === 0x2c && ++values > maxValues) return this.stop(depth, values, `the request JSON has more than ${maxValues} values`);
    }
    if (values > maxValues) return this.stop(depth, values, `the request JSON has more than ${maxValues} values`);
    this.depth = depth;
    this.values = values;
    this.inString = inString;
    this.escaped = escaped;
    return undefined;
  }

  private stop(depth: number, values: number, why: string): string {
    this.depth = depth;
    this.values = values;
    return why;
  }
}

/** Index of `byte` in `chunk` from `from`, or `n` (the end) when absent. */
function indexOr(chunk: Uint8Array, byte: number, from: number, n: number): number {
  const at = chunk.indexOf(byte, from);
  return at < 0 ? n : at;
}
