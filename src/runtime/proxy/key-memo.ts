/**
 * Segment keys remembered by position. A harness sends its whole conversation on every call, and
 * the rollouts of a step share their header (system prompt + tools) and often their first user
 * message: most segments of a request are, value for value, the ones the previous request had at
 * the same place. Those reuse the key string made then — no serializing of the messages again, and
 * its hash already computed for the trie's and the segment cache's maps. A value that differs in
 * anything, key order included, gets its key made afresh: the memo never changes what a key is.
 */
export class KeyMemo {
  private readonly entries: ({ value: unknown; key: string } | undefined)[] = [];

  /**
   * The key of `value` at `position`: the one remembered here (or in `shared`, another rollout's
   * memo) when `value` equals the value it was made from, else `make(value)`, remembered in both.
   */
  keyOf<T>(position: number, value: T, make: (value: T) => string, shared?: KeyMemo): string {
    const own = this.entries[position];
    if (own !== undefined && sameValue(own.value, value)) return own.key;
    const other = shared?.entries[position];
    const entry = other !== undefined && sameValue(other.value, value) ? other : { value, key: make(value) };
    this.entries[position] = entry;
    if (shared && entry !== other) shared.entries[position] = entry;
    return entry.key;
  }
}

/**
 * Equality of JSON values (plain objects, arrays, primitives) as JSON.stringify would tell it:
 * objects must have the same keys in the same order (a template that serializes them keeps their
 * order), a key whose value is `undefined` counts as a key.
 */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  const aArray = Array.isArray(a);
  if (aArray !== Array.isArray(b)) return false;
  if (aArray) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!sameValue(x[i], y[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const xKeys = Object.keys(x);
  const yKeys = Object.keys(y);
  if (xKeys.length !== yKeys.length) return false;
  for (let i = 0; i < xKeys.length; i++) {
    const k = xKeys[i]!;
    if (k !== yKeys[i] || !sameValue(x[k], y[k])) return false;
  }
  return true;
}
