/**
 * Synthetic call records for tests and benchmarks: a seeded RNG, a rollout builder, harness-like
 * scenarios (token-level mimicry of the behaviours in the harness notes) and random call sets.
 */
import type { CallClass } from "../../src/compiler/contract/plan.js";
import { rng } from "../../src/compiler/contract/rng.js";
import type { CallRecord, FinishReason } from "../../src/runtime/records/index.js";

export type Rng = () => number;

/** The seeded generator of reins itself (mulberry32). */
export function seededRng(seed: number): Rng {
  return rng(seed);
}

export const randInt = (rng: Rng, lo: number, hi: number): number => lo + Math.floor(rng() * (hi - lo + 1));
export const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];

export interface CallOptions {
  callClass?: CallClass;
  finishReason?: FinishReason;
  error?: CallRecord["error"];
  weightsVersion?: string;
}

/** Builds one rollout's records in arrival order. */
export class RolloutBuilder {
  readonly records: CallRecord[] = [];
  private next = 0;
  constructor(
    readonly rollout: string,
    readonly rng: Rng,
    readonly vocab: [number, number] = [1000, 60000],
  ) {}

  /** n fresh random tokens. */
  tokens(n: number): number[] {
    const out = new Array<number>(n);
    for (let i = 0; i < n; i++) out[i] = randInt(this.rng, this.vocab[0], this.vocab[1]);
    return out;
  }

  /** Record a call; returns its completion. */
  call(prompt: number[], completion: number[], opts: CallOptions = {}): number[] {
    const failed = opts.error !== undefined;
    this.records.push({
      v: 2,
      rolloutId: this.rollout,
      try: 1,
      seq: this.next++,
      dialect: "openai-chat",
      model: "m",
      stream: true,
      promptIds: [...prompt],
      completionIds: [...completion],
      completionLogprobs: completion.map(() => -Math.round(this.rng() * 4000) / 1000),
      finishReason: opts.finishReason ?? (failed ? "error" : "stop"),
      parse: { ok: !failed },
      callClass: opts.callClass ?? "main",
      reused: [],
      tokenizedPromptTokens: prompt.length,
      weightsVersion: opts.weightsVersion ?? "v0",
      timings: { receivedMs: 0, doneMs: 1 },
      ...(opts.error ? { error: opts.error } : {}),
    });
    return completion;
  }
}

export interface ChainShape {
  turns: number;
  system: number;
  user: number;
  toolResult: [number, number];
  completion: [number, number];
}

export const DEFAULT_SHAPE: ChainShape = { turns: 6, system: 400, user: 40, toolResult: [30, 300], completion: [20, 120] };

/** Append-only harness (Claude Code, Codex, pi): call i's prompt extends call i-1's prompt+completion. */
export function appendOnlyChain(b: RolloutBuilder, shape: ChainShape = DEFAULT_SHAPE, start: number[] = []): number[] {
  let history = [...start, ...b.tokens(shape.system), ...b.tokens(shape.user)];
  for (let t = 0; t < shape.turns; t++) {
    const c = b.call(history, b.tokens(randInt(b.rng, ...shape.completion)));
    history = [...history, ...c];
    if (t < shape.turns - 1) history = [...history, ...b.tokens(randInt(b.rng, ...shape.toolResult))];
  }
  return history;
}

/**
 * OpenClaw chat/Messages: a trailing internal-context message stays last; new turns are inserted
 * before it, so no call's prompt extends an earlier call's prompt+completion.
 */
export function trailingContextChain(b: RolloutBuilder, shape: ChainShape = DEFAULT_SHAPE): void {
  const context = b.tokens(60);
  let turns = [...b.tokens(shape.system), ...b.tokens(shape.user)];
  for (let t = 0; t < shape.turns; t++) {
    const c = b.call([...turns, ...context], b.tokens(randInt(b.rng, ...shape.completion)));
    turns = [...turns, ...c, ...b.tokens(randInt(b.rng, ...shape.toolResult))];
  }
}

/** Random call sets over a tiny vocabulary (many accidental coincidences), for property tests. */
export function randomCallSet(rng: Rng, rollout: string, calls: number): CallRecord[] {
  const b = new RolloutBuilder(rollout, rng, [0, 3]);
  const seqs: number[][] = [];
  const classes: CallClass[] = ["main", "main", "main", "subagent", "compaction", "title"];
  for (let k = 0; k < calls; k++) {
    let prompt: number[];
    const r = rng();
    if (seqs.length === 0 || r < 0.15) prompt = b.tokens(randInt(rng, 0, 4));
    else if (r < 0.55) {
      const base = pick(rng, seqs);
      prompt = [...base, ...b.tokens(randInt(rng, 0, 3))];
    } else if (r < 0.75) {
      const base = pick(rng, seqs);
      prompt = base.slice(0, randInt(rng, 0, base.length));
    } else {
      const base = pick(rng, seqs);
      prompt = [...base.slice(0, randInt(rng, 0, base.length)), ...b.tokens(randInt(rng, 0, 3))];
    }
    const completion = b.tokens(randInt(rng, 0, 4));
    const failed = rng() < 0.15;
    b.call(prompt, completion, {
      callClass: pick(rng, classes),
      ...(failed ? { error: { kind: "engine" as const, message: "x" } } : {}),
    });
    seqs.push([...prompt, ...completion]);
  }
  // Shuffle arrival order of the lines (the tree must sort by seq).
  return b.records.sort(() => rng() - 0.5);
}

/** Synthetic multi-turn rollout for benchmarks: an append-only chain with a retry and a subagent. */
export function benchRollout(rng: Rng, rollout: string, turns: number, shape: Partial<ChainShape> = {}): CallRecord[] {
  const b = new RolloutBuilder(rollout, rng);
  const s = { ...DEFAULT_SHAPE, ...shape, turns };
  let history = [...b.tokens(s.system), ...b.tokens(s.user)];
  for (let t = 0; t < turns; t++) {
    if (t === Math.floor(turns / 2)) {
      b.call(history, b.tokens(randInt(rng, ...s.completion)), { error: { kind: "engine", message: "500" } });
      appendOnlyChain(b, { ...s, turns: 2, system: 100 }, history.slice(0, 1));
      b.records[b.records.length - 1].callClass = "subagent";
      b.records[b.records.length - 2].callClass = "subagent";
    }
    const c = b.call(history, b.tokens(randInt(rng, ...s.completion)));
    history = [...history, ...c, ...b.tokens(randInt(rng, ...s.toolResult))];
  }
  return b.records;
}
