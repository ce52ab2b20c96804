import { KeyMemo } from "./key-memo.js";

/**
 * Token ids of rendered segments shared across rollouts (bounded, least recently used first out).
 * Rollouts of one harness share their header (system prompt + tools: 28 KB for Claude Code) and
 * often their first user messages; each is tokenized once per proxy instead of once per rollout.
 */
export class SegmentCache {
  /** The segment keys last made by any rollout, by position: a fresh rollout's header and first messages are usually the same. */
  readonly keys = new KeyMemo();
  private readonly entries = new Map<string, readonly number[]>();
  private size = 0;

  /** `budget`: tokens plus key characters / 4, roughly the memory held in 8-byte units. */
  constructor(private readonly budget = 4_000_000) {}

  get(key: string): readonly number[] | undefined {
    const ids = this.entries.get(key);
    if (ids) {
      this.entries.delete(key);
      this.entries.set(key, ids);
    }
    return ids;
  }

  set(key: string, ids: readonly number[]): void {
    const cost = costOf(key, ids);
    if (cost > this.budget / 4) return;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.size -= costOf(key, old);
    }
    this.entries.set(key, ids);
    this.size += cost;
    while (this.size > this.budget) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      const oldIds = this.entries.get(oldest.value)!;
      this.entries.delete(oldest.value);
      this.size -= costOf(oldest.value, oldIds);
    }
  }
}

function costOf(key: string, ids: readonly number[]): number {
  return ids.length + Math.ceil(key.length / 4);
}
