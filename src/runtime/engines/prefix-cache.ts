/**
 * The onnx engine's prefix KV cache: the KV states (present.* outputs) of recently processed
 * token sequences of ONE loaded weights version, so that a prompt sharing a long prefix with an
 * earlier one (a harness's system prompt and tool schema across a step's rollouts; a call that
 * extends the previous call of the same rollout) prefills only the rest.
 *
 * - Bounded: at most `entries` sequences and `maxMiB` of KV, least recently used evicted first.
 * - Immutable entries: a stored state is never written; a hit hands out the stored tensors
 *   themselves (whole-entry reuse) or sliced copies along the sequence axis, so a generation in
 *   flight and a later eviction cannot disturb each other. The engine is single-threaded JS:
 *   lookups and inserts run between awaits, so concurrent generations see a consistent cache.
 * - Prefills in flight: a prompt whose prefix another call is prefilling right now (the first
 *   calls of a step's rollouts arrive together) waits for that prefill and reuses it, rather than
 *   prefilling the same tokens in parallel (`better`).
 * - One cache per loaded weights version (the engine owns one per session); a generation that
 *   finishes on a retired version stores nothing (see `closed`).
 */
import * as ort from "onnxruntime-node";

export interface PrefixCacheLimits {
  entries: number;
  maxMiB: number;
}

export interface PrefixCacheStats {
  /** Prompts looked up, prompts that reused a stored prefix, prompt tokens reused and prefilled. */
  lookups: number;
  hits: number;
  reusedTokens: number;
  prefilledTokens: number;
  entries: number;
  bytes: number;
}

export interface KvShape {
  layers: number;
  kvHeads: number;
  headDim: number;
}

/** past_key_values.{i}.key/value → tensors [1, kvHeads, length, headDim]. */
export type KvState = Record<string, ort.Tensor>;

interface Entry {
  ids: number[];
  state: KvState;
  bytes: number;
}

interface Pending {
  ids: readonly number[];
  done: Promise<void>;
}

/** A prefill in flight is worth waiting for when it gives a prompt this many more tokens. */
const WAIT_GAIN = 64;

/** Longest common prefix of two id sequences. */
export function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

export class PrefixCache {
  /** Most recently used last. */
  private entries: Entry[] = [];
  private pending: Pending[] = [];
  private bytes = 0;
  private closed = false;
  readonly stats = { lookups: 0, hits: 0, reusedTokens: 0, prefilledTokens: 0 };

  constructor(
    readonly limits: PrefixCacheLimits,
    readonly kv: KvShape,
  ) {}

  /** The longest stored prefix `prompt` could reuse now. */
  private stored(prompt: readonly number[]): number {
    let best = 0;
    for (const e of this.entries) best = Math.max(best, Math.min(commonPrefix(e.ids, prompt), prompt.length - 1));
    return best;
  }

  /** A prefill in flight that would give `prompt` a much longer prefix than any stored one: wait for it, then look up. */
  better(prompt: readonly number[]): Promise<void> | null {
    const have = this.stored(prompt);
    for (const p of this.pending) {
      if (Math.min(commonPrefix(p.ids, prompt), prompt.length - 1) >= have + WAIT_GAIN) return p.done;
    }
    return null;
  }

  /** Announce a prefill of `ids`; call the function returned when it has ended (stored or not). */
  begin(ids: readonly number[]): () => void {
    let end!: () => void;
    const p: Pending = { ids, done: new Promise<void>((r) => (end = r)) };
    this.pending.push(p);
    return () => {
      this.pending = this.pending.filter((x) => x !== p);
      end();
    };
  }

  /**
   * The longest stored prefix of `prompt` that leaves at least one token to run (the last prompt
   * position's logits are needed): the KV state of its first `length` tokens, or length 0.
   */
  lookup(prompt: readonly number[]): { length: number; state: KvState | null } {
    this.stats.lookups++;
    let best: Entry | null = null;
    let length = 0;
    for (const e of this.entries) {
      const n = Math.min(commonPrefix(e.ids, prompt), prompt.length - 1);
      if (n > length) {
        best = e;
        length = n;
      }
    }
    if (!best || length === 0) {
      this.stats.prefilledTokens += prompt.length;
      return { length: 0, state: null };
    }
    this.touch(best);
    this.stats.hits++;
    this.stats.reusedTokens += length;
    this.stats.prefilledTokens += prompt.length - length;
    return { length, state: length === best.ids.length ? best.state : sliceState(best.state, this.kv, best.ids.length, length) };
  }

  /**
   * Store the KV state of `ids` (state length = ids.length). An entry whose ids are a prefix of
   * `ids` is replaced (the longer one serves every prompt it served); one that extends `ids`
   * makes this one redundant. Sequences over the byte budget on their own are not stored.
   */
  insert(ids: readonly number[], state: KvState): void {
    if (this.closed || ids.length === 0) return;
    const bytes = stateBytes(state);
    if (bytes > this.limits.maxMiB * 1024 * 1024) return;
    for (const e of this.entries) {
      if (e.ids.length >= ids.length && commonPrefix(e.ids, ids) === ids.length) {
        this.touch(e);
        return;
      }
    }
    this.entries = this.entries.filter((e) => {
      const covered = e.ids.length < ids.length && commonPrefix(e.ids, ids) === e.ids.length;
      if (covered) this.bytes -= e.bytes;
      return !covered;
    });
    this.entries.push({ ids: [...ids], state, bytes });
    this.bytes += bytes;
    while (this.entries.length > this.limits.entries || this.bytes > this.limits.maxMiB * 1024 * 1024) {
      const old = this.entries.shift()!;
      this.bytes -= old.bytes;
    }
  }

  /** Drop everything and refuse later inserts (the weights version was retired). */
  close(): void {
    this.closed = true;
    this.entries = [];
    this.bytes = 0;
  }

  snapshot(): PrefixCacheStats {
    return { ...this.stats, entries: this.entries.length, bytes: this.bytes };
  }

  private touch(e: Entry): void {
    const i = this.entries.indexOf(e);
    if (i >= 0 && i !== this.entries.length - 1) {
      this.entries.splice(i, 1);
      this.entries.push(e);
    }
  }
}

function stateBytes(state: KvState): number {
  let n = 0;
  for (const t of Object.values(state)) n += (t.data as Float32Array).byteLength;
  return n;
}

/** Copies of the first `length` positions of a state of `total` positions. */
export function sliceState(state: KvState, kv: KvShape, total: number, length: number): KvState {
  const out: KvState = {};
  const d = kv.headDim;
  for (const [name, t] of Object.entries(state)) {
    const src = t.data as Float32Array;
    const dst = new Float32Array(kv.kvHeads * length * d);
    for (let h = 0; h < kv.kvHeads; h++) dst.set(src.subarray(h * total * d, (h * total + length) * d), h * length * d);
    out[name] = new ort.Tensor("float32", dst, [1, kv.kvHeads, length, d]);
  }
  return out;
}
