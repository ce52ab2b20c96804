/**
 * One thread's share of the `onnx` engine (./onnx.ts runs one of these in each of its threads): an
 * ONNX causal LM through onnxruntime-node, a generation at a time per call, token by token.
 *
 * - Graphs: the trainer's KV-cache export (inputs input_ids, attention_mask, position_ids,
 *   past_key_values.{i}.key/value; outputs logprobs + present.{i}.key/value), or any plain causal
 *   LM graph taking input_ids (and optionally attention_mask / position_ids) and returning
 *   `logprobs` or `logits` [B, S, V] (then each step recomputes the whole sequence).
 * - Sampling: temperature, top-p, greedy at temperature 0, with a seeded RNG per call
 *   (sampling.seed, else the engine seed's "sampling" seed of the plan's rollout id, the call's seq
 *   and, from the second try on, the try: contract/seeds.ts).
 * - Logprobs: each returned logprob is the UNTEMPERED model's log-probability of the sampled token
 *   (log-softmax of the raw logits), the quantity the trainer recomputes, so TIS ratios measure
 *   only the engine/trainer mismatch. With temperature ≠ 1 or top-p < 1 the behaviour policy is not
 *   the untempered model and the corrections do not account for that; train at temperature 1.
 * - Threads: `threads` intra-op threads (default 1), never spinning while they wait.
 * - Weights: `modelPath` (a model directory with model.onnx, or an .onnx file) at start; the
 *   control loop publishes later versions with `reload` (the trainer's save_weights directory).
 * - Hot reload: `reload(version, path)` loads a new session, then swaps it in; a generation that
 *   already started finishes on the session it started with, and each result carries the version
 *   that produced it. A session is released when its last generation ends.
 * - Prefix cache (`prefixCache`, off by default): each loaded version keeps the KV states of recent
 *   prompts and completions (prefix-cache.ts); a prompt prefills only what follows its longest
 *   stored prefix. Never shared across versions: the cache lives and dies with its session.
 *   Reusing a prefix computes the same values as a full prefill up to float rounding (matrix
 *   products of other shapes), and which prompts hit depends on the order of concurrent calls.
 */
import * as ort from "onnxruntime-node";
import type { ResolvedEngine } from "../../compiler/contract/plan.js";
import { createRng } from "../../compiler/contract/rng.js";
import { deriveSeed } from "../../compiler/contract/seeds.js";
import { fileVersion, locateModel } from "../policy/model-dir.js";
import { logSoftmax, sampleToken } from "../policy/sampler.js";
import { PrefixCache, type PrefixCacheLimits, type PrefixCacheStats } from "./prefix-cache.js";
import { EngineError, type GenerateChunk, type GenerateRequest, type GenerateResult } from "./engine.js";

export type OnnxEngineSpec = Extract<ResolvedEngine, { type: "onnx" }>;

interface KvLayout {
  layers: number;
  kvHeads: number;
  headDim: number;
}

/** One loaded weights version. */
class LoadedModel {
  active = 0;
  retired = false;
  private released = false;
  cache: PrefixCache | null = null;
  constructor(
    readonly session: ort.InferenceSession,
    readonly version: string,
    readonly kv: KvLayout | null,
    readonly hasMask: boolean,
    readonly hasPositions: boolean,
    readonly output: string,
    readonly maxContext: number,
  ) {}

  retire(): void {
    this.retired = true;
    this.cache?.close();
  }

  async releaseIfIdle(): Promise<void> {
    if (this.retired && this.active === 0 && !this.released) {
      this.released = true;
      await this.session.release();
    }
  }
}

const int64 = (values: number[], dims: number[]) =>
  new ort.Tensor(
    "int64",
    BigInt64Array.from(values, (v) => BigInt(v)),
    dims,
  );

/** A shared run of int64 ones for attention masks (grown on demand, never written after fill). */
let ones = new BigInt64Array(0);
function onesMask(n: number): ort.Tensor {
  if (ones.length < n) ones = new BigInt64Array(Math.max(n, 2 * ones.length, 1024)).fill(1n);
  return new ort.Tensor("int64", ones.subarray(0, n), [1, n]);
}

async function loadModel(path: string, version: string | undefined, threads: number, prefixCache?: PrefixCacheLimits): Promise<LoadedModel> {
  let loc: ReturnType<typeof locateModel>;
  try {
    loc = locateModel(path);
  } catch (e) {
    throw new EngineError((e as Error).message);
  }
  if (!loc) throw new EngineError(`no ONNX model at ${path} (expected a model directory with model.onnx, or an .onnx file)`);
  if (version && loc.readyVersion && loc.readyVersion !== version) {
    throw new EngineError(`the weights at ${loc.dir} are version ${loc.readyVersion}, not the requested ${version}`);
  }
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(loc.onnxPath, {
      intraOpNumThreads: Math.max(1, threads),
      interOpNumThreads: 1,
      graphOptimizationLevel: "all",
      // Threads that wait for work sleep instead of spinning: the engine shares the machine with
      // the rollouts' sandboxes and the trainer, and a spinning thread takes a core from them
      // (measured on the quickstart's policy: 2 spinning threads cost 1.9x the CPU of one, no faster).
      extra: { session: { intra_op: { allow_spinning: "0" } } },
    });
  } catch (e) {
    throw new EngineError(`onnxruntime could not load ${loc.onnxPath}: ${(e as Error).message}`);
  }
  const names = new Set(session.inputNames);
  const output = session.outputNames.includes("logprobs") ? "logprobs" : session.outputNames.includes("logits") ? "logits" : "";
  if (!names.has("input_ids") || !output) {
    await session.release();
    throw new EngineError(`${loc.onnxPath} is not a causal LM graph: it needs an input_ids input and a logprobs or logits output`);
  }
  let kv: KvLayout | null = null;
  if (names.has("past_key_values.0.key")) {
    const meta = session.inputMetadata.find((m) => m.name === "past_key_values.0.key");
    const shape = meta?.isTensor ? meta.shape : [];
    const layers = session.inputNames.filter((n) => /^past_key_values\.\d+\.key$/.test(n)).length;
    const kvHeads = typeof shape[1] === "number" ? shape[1] : loc.config?.num_key_value_heads;
    const headDim = typeof shape[3] === "number" ? shape[3] : loc.config?.head_dim;
    if (!kvHeads || !headDim) {
      await session.release();
      throw new EngineError(`${loc.onnxPath} has a KV cache of unknown shape (no static dims, no config.json)`);
    }
    kv = { layers, kvHeads, headDim };
  }
  if (prefixCache && !kv) {
    await session.release();
    throw new EngineError(
      `${loc.onnxPath} has no KV-cache inputs (past_key_values.*), so its prompts cannot reuse a prefix: remove prefixCache or export the KV-cache graph`,
    );
  }
  const loaded = new LoadedModel(
    session,
    version ?? loc.readyVersion ?? fileVersion(loc.onnxPath),
    kv,
    names.has("attention_mask"),
    names.has("position_ids"),
    output,
    loc.config?.max_position_embeddings ?? Number.MAX_SAFE_INTEGER,
  );
  if (prefixCache && kv) loaded.cache = new PrefixCache(prefixCache, kv);
  return loaded;
}

export class OnnxSampler {
  private current: Promise<LoadedModel>;
  private next: LoadedModel | null = null;
  private closed = false;

  constructor(readonly spec: OnnxEngineSpec) {
    this.current = loadModel(spec.modelPath, undefined, spec.threads, spec.prefixCache);
    this.current.catch(() => undefined); // reported on first use
  }

  /** Resolves once the first model is loaded (rejects with an EngineError if it cannot be). */
  async ready(): Promise<{ version: string }> {
    const m = await this.current;
    return { version: m.version };
  }

  get weightsVersion(): Promise<string> {
    return this.current.then((m) => m.version);
  }

  /** The current version's prefix-cache counters (null when the cache is off). */
  async prefixCacheStats(): Promise<(PrefixCacheStats & { version: string }) | null> {
    const m = await this.current;
    return m.cache ? { ...m.cache.snapshot(), version: m.version } : null;
  }

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    return this.run(req, undefined);
  }

  async generateStream(req: GenerateRequest, onChunk: (c: GenerateChunk) => void): Promise<GenerateResult> {
    return this.run(req, onChunk);
  }

  async reload(version: string, path: string): Promise<void> {
    await this.prepare(version, path);
    await this.commit();
  }

  /** Loads a version beside the one serving (rejects, the old one untouched, if it cannot). */
  async prepare(version: string, path: string): Promise<void> {
    if (this.closed) throw new EngineError("the onnx engine is closed");
    await this.discard();
    this.next = await loadModel(path, version, this.spec.threads, this.spec.prefixCache);
  }

  /** Serves the prepared version; generations under way finish on the one they started with. */
  async commit(): Promise<void> {
    const next = this.next;
    if (!next) throw new Error("bug: commit without a prepared version");
    this.next = null;
    const prev = await this.current.catch(() => null);
    this.current = Promise.resolve(next);
    if (prev) {
      prev.retire();
      await prev.releaseIfIdle();
    }
  }

  /** Drops a prepared version (another thread could not load it). */
  async discard(): Promise<void> {
    const next = this.next;
    this.next = null;
    if (next) {
      next.retire();
      await next.releaseIfIdle();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.discard();
    const m = await this.current.catch(() => null);
    if (m) {
      m.retire();
      await m.releaseIfIdle();
    }
  }

  private async run(req: GenerateRequest, onChunk?: (c: GenerateChunk) => void): Promise<GenerateResult> {
    if (this.closed) throw new EngineError("the onnx engine is closed");
    let m = await this.current;
    while (m.retired) {
      // swapped out between resolution and here, or closed
      if (this.closed) throw new EngineError("the onnx engine is closed");
      m = await this.current;
    }
    m.active++;
    try {
      return await this.sample(m, req, onChunk);
    } finally {
      m.active--;
      await m.releaseIfIdle();
    }
  }

  private async sample(m: LoadedModel, req: GenerateRequest, onChunk?: (c: GenerateChunk) => void): Promise<GenerateResult> {
    const { sampling } = req;
    if (req.promptIds.length === 0) throw new EngineError("the prompt is empty; the onnx engine needs at least one token", "bad-response");
    const rng = createRng(sampling.seed ?? deriveSeed(this.spec.seed, "sampling", req.rolloutId, req.seq, req.try));
    const stop = new Set(sampling.stopIds);
    const ids: number[] = [];
    const logprobs: number[] = [];
    let finish: GenerateResult["finish"] = "length";
    const budget = Math.min(sampling.maxTokens, m.maxContext - req.promptIds.length);
    let state = m.kv ? emptyPast(m.kv) : null;
    let hit: { length: number; state: Record<string, ort.Tensor> | null } = { length: 0, state: null };
    let row: Float32Array;
    if (m.cache) {
      // Wait (a few times at most) for prefills in flight that this prompt shares much of.
      for (let w = 0, p = m.cache.better(req.promptIds); p && w < 4; w++, p = m.cache.better(req.promptIds)) await p;
      if (req.signal?.aborted) throw new EngineError("the generation was aborted by the client");
      hit = m.cache.lookup(req.promptIds);
      const end = m.cache.begin(req.promptIds);
      try {
        row = await this.step(m, req.promptIds.slice(hit.length), hit.length, hit.state ?? state, (s) => (state = s));
        if (state) m.cache.insert(req.promptIds, state);
      } finally {
        end();
      }
    } else {
      row = await this.step(m, req.promptIds, 0, state, (s) => (state = s));
    }
    // The ids whose KV `state` holds: the prompt, then each sampled token once it is fed back.
    const fed = m.cache ? [...req.promptIds] : null;
    for (let t = 0; t < budget; t++) {
      if (req.signal?.aborted) throw new EngineError("the generation was aborted by the client");
      const pick = sampleToken(row, sampling.temperature, sampling.topP, rng);
      ids.push(pick.id);
      logprobs.push(pick.logprob);
      onChunk?.({ ids: [pick.id], logprobs: [pick.logprob] });
      if (stop.has(pick.id)) {
        finish = "stop";
        break;
      }
      if (t + 1 >= budget) break;
      const total = req.promptIds.length + ids.length;
      fed?.push(pick.id);
      row = m.kv
        ? await this.step(m, [pick.id], total - 1, state, (s) => (state = s))
        : await this.step(m, [...req.promptIds, ...ids], 0, null, () => undefined);
    }
    if (fed && state && fed.length > req.promptIds.length) m.cache!.insert(fed, state);
    return { ids, logprobs, finish, weightsVersion: m.version };
  }

  /** Run the graph on `tokens` at positions start.. and return the last position's logprobs. */
  private async step(
    m: LoadedModel,
    tokens: number[],
    start: number,
    past: Record<string, ort.Tensor> | null,
    keep: (s: Record<string, ort.Tensor>) => void,
  ): Promise<Float32Array> {
    const s = tokens.length;
    const feeds: Record<string, ort.Tensor> = { input_ids: int64(tokens, [1, s]) };
    if (m.hasMask) feeds.attention_mask = onesMask(start + s);
    if (m.hasPositions)
      feeds.position_ids = int64(
        Array.from({ length: s }, (_, i) => start + i),
        [1, s],
      );
    if (past) Object.assign(feeds, past);
    let out: ort.InferenceSession.ReturnType;
    try {
      out = await m.session.run(feeds);
    } catch (e) {
      throw new EngineError(`onnxruntime failed on weights ${m.version}: ${(e as Error).message}`);
    }
    const lp = out[m.output];
    const v = lp.dims[2];
    const data = lp.data as Float32Array;
    const row = data.subarray((s - 1) * v, s * v);
    if (m.kv) {
      const next: Record<string, ort.Tensor> = {};
      for (let i = 0; i < m.kv.layers; i++) {
        next[`past_key_values.${i}.key`] = out[`present.${i}.key`];
        next[`past_key_values.${i}.value`] = out[`present.${i}.value`];
      }
      keep(next);
    }
    return m.output === "logits" ? logSoftmax(row) : row;
  }
}

function emptyPast(kv: KvLayout): Record<string, ort.Tensor> {
  const past: Record<string, ort.Tensor> = {};
  for (let i = 0; i < kv.layers; i++) {
    for (const k of ["key", "value"]) {
      past[`past_key_values.${i}.${k}`] = new ort.Tensor("float32", new Float32Array(0), [1, kv.kvHeads, 0, kv.headDim]);
    }
  }
  return past;
}

/**
 * An OnnxSampler behind the engine's messages ({t: "ready" | "generate" | "stats" | "prepare" |
 * "commit" | "discard" | "close"}, each with its id): what a generating thread (./onnx-worker.mjs)
 * and the in-process sampler of `parallel: 1` (./onnx.ts) both answer with.
 */
export class SamplerHost {
  private readonly sampler: OnnxSampler;
  /** Abort controllers of the generations under way, by message id. */
  private readonly running = new Map<number, AbortController>();

  constructor(spec: OnnxEngineSpec) {
    this.sampler = new OnnxSampler(spec);
  }

  async answer(id: number, m: Record<string, unknown>, onChunk?: (c: GenerateChunk) => void): Promise<unknown> {
    const s = this.sampler;
    switch (m.t) {
      case "ready":
        return s.ready();
      case "generate": {
        const controller = new AbortController();
        this.running.set(id, controller);
        try {
          return await s.generateStream({ ...(m.req as GenerateRequest), signal: controller.signal }, onChunk ?? (() => undefined));
        } finally {
          this.running.delete(id);
        }
      }
      case "stats":
        return s.prefixCacheStats();
      case "prepare":
        return s.prepare(m.version as string, m.path as string);
      case "commit":
        return s.commit();
      case "discard":
        return s.discard();
      case "close":
        return s.close();
      default:
        throw new Error(`bug: unknown message ${String(m.t)}`);
    }
  }

  /** Aborts the generation of message `id`, if it is under way. */
  abort(id: number): void {
    this.running.get(id)?.abort();
  }
}
