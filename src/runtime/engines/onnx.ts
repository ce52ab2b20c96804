/**
 * The `onnx` engine: an ONNX causal LM through onnxruntime-node, off reins's event loop.
 *
 * onnxruntime-node runs a graph synchronously on the thread that calls it, so generating on the
 * event loop holds the proxy, the executor and every other rollout for each token. With `parallel`
 * ≥ 2 the engine runs that many threads of its own, each an OnnxSampler (./onnx-sampler.ts:
 * sampling, logprobs, the KV cache, the prefix cache) with its own session of the same weights; a
 * generation runs on one thread from start to end, so its tokens and logprobs are those a single
 * thread gives (its random stream is seeded by the request, not by the thread). With `parallel: 1`
 * (the default) one OnnxSampler samples in this process, as a thread would: a thread costs ~1.7 s
 * of CPU to start (its TypeScript loader and session), which a short run or a test pays each time.
 *
 * - Routing: a rollout's calls go to the thread its first call went to (the least busy then), so a
 *   later turn finds its prefix in that thread's prefix cache.
 * - Reload: every thread loads the new version beside the serving one; only when all have it does
 *   each swap (generations under way finish on the version they started with); when one cannot,
 *   none swaps and the old version keeps serving.
 */
import { Worker } from "node:worker_threads";
import { EngineError, type Engine, type EngineErrorKind, type GenerateChunk, type GenerateRequest, type GenerateResult } from "./engine.js";
import type { PrefixCacheStats } from "./prefix-cache.js";
import { SamplerHost, type OnnxEngineSpec } from "./onnx-sampler.js";

export type { OnnxEngineSpec } from "./onnx-sampler.js";

/** What a caller gives: the plan's onnx engine, `parallel` optional (default 1). */
export type OnnxEngineOptions = Omit<OnnxEngineSpec, "parallel"> & { parallel?: number };

type Reply =
  | { id: number; t: "chunk"; ids: number[]; logprobs: number[] }
  | { id: number; t: "ok"; value?: unknown }
  | { id: number; t: "err"; message: string; kind: EngineErrorKind };

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  onChunk?: (c: GenerateChunk) => void;
}

/** Where generations run: a thread of its own, or this process (parallel 1). */
interface SamplerPlace {
  active: number;
  call<T>(message: Record<string, unknown>, onChunk?: (c: GenerateChunk) => void): { id: number; done: Promise<T> };
  abort(id: number): void;
  stop(): Promise<void>;
}

/** An OnnxSampler in this process, answering the messages a thread would (the same SamplerHost). */
class SamplerHere implements SamplerPlace {
  private readonly host: SamplerHost;
  private nextId = 0;
  active = 0;

  constructor(spec: OnnxEngineSpec) {
    this.host = new SamplerHost(spec);
  }

  call<T>(m: Record<string, unknown>, onChunk?: (c: GenerateChunk) => void): { id: number; done: Promise<T> } {
    const id = this.nextId++;
    return { id, done: this.host.answer(id, m, onChunk) as Promise<T> };
  }

  abort(id: number): void {
    this.host.abort(id);
  }

  async stop(): Promise<void> {
    await this.host.answer(-1, { t: "close" });
  }
}

/** One generating thread and the calls waiting on it. */
class SamplerThread implements SamplerPlace {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: EngineError | null = null;
  /** Generations under way on this thread. */
  active = 0;

  constructor(spec: OnnxEngineSpec) {
    this.worker = new Worker(new URL("./onnx-worker.mjs", import.meta.url), { workerData: { spec } });
    this.worker.on("message", (m: Reply) => this.answer(m));
    this.worker.on("error", (e) => this.fail(`the onnx engine's thread failed: ${e.message}`));
    this.worker.on("exit", (code) => this.fail(`the onnx engine's thread ended (exit code ${code})`));
  }

  private answer(m: Reply): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.t === "chunk") {
      p.onChunk?.({ ids: m.ids, logprobs: m.logprobs });
      return;
    }
    this.pending.delete(m.id);
    if (m.t === "ok") p.resolve(m.value);
    else p.reject(new EngineError(m.message, m.kind));
  }

  private fail(message: string): void {
    this.failure ??= new EngineError(message);
    for (const p of this.pending.values()) p.reject(this.failure);
    this.pending.clear();
  }

  /** Sends one request; resolves with its answer's value. */
  call<T>(message: Record<string, unknown>, onChunk?: (c: GenerateChunk) => void): { id: number; done: Promise<T> } {
    const id = this.nextId++;
    const done = new Promise<T>((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, ...(onChunk ? { onChunk } : {}) });
      this.worker.postMessage({ ...message, id });
    });
    return { id, done };
  }

  abort(id: number): void {
    if (!this.failure) this.worker.postMessage({ t: "abort", id });
  }

  async stop(): Promise<void> {
    if (!this.failure) await this.call({ t: "close" }).done.catch(() => undefined);
    this.failure ??= new EngineError("the onnx engine is closed");
    await this.worker.terminate();
  }
}

export class OnnxEngine implements Engine {
  readonly type = "onnx";
  readonly spec: OnnxEngineSpec;
  private readonly threads: SamplerPlace[];
  /** The thread each rollout's calls go to (its first call's). */
  private readonly threadOf = new Map<string, SamplerPlace>();
  private serving: Promise<string>;
  private closed = false;

  constructor(options: OnnxEngineOptions) {
    this.spec = { ...options, parallel: Math.max(1, options.parallel ?? 1) };
    this.threads = this.spec.parallel === 1 ? [new SamplerHere(this.spec)] : Array.from({ length: this.spec.parallel }, () => new SamplerThread(this.spec));
    this.serving = Promise.all(this.threads.map((t) => t.call<{ version: string }>({ t: "ready" }).done)).then(([first]) => first!.version);
    this.serving.catch(() => undefined); // reported on first use
  }

  /** Resolves once every thread has loaded the first model (rejects with an EngineError if one cannot). */
  async ready(): Promise<{ version: string }> {
    return { version: await this.serving };
  }

  get weightsVersion(): Promise<string> {
    return this.serving;
  }

  /** The serving version's prefix-cache counters, summed over the threads (null when the cache is off). */
  async prefixCacheStats(): Promise<(PrefixCacheStats & { version: string }) | null> {
    const all = await Promise.all(this.threads.map((t) => t.call<(PrefixCacheStats & { version: string }) | null>({ t: "stats" }).done));
    if (all.some((s) => s === null)) return null;
    const stats = all as (PrefixCacheStats & { version: string })[];
    const sum = (k: keyof PrefixCacheStats) => stats.reduce((n, s) => n + s[k], 0);
    return {
      version: stats[0]!.version,
      lookups: sum("lookups"),
      hits: sum("hits"),
      reusedTokens: sum("reusedTokens"),
      prefilledTokens: sum("prefilledTokens"),
      entries: sum("entries"),
      bytes: sum("bytes"),
    };
  }

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    return this.run(req, undefined);
  }

  async generateStream(req: GenerateRequest, onChunk: (c: GenerateChunk) => void): Promise<GenerateResult> {
    return this.run(req, onChunk);
  }

  private threadFor(rolloutId: string): SamplerPlace {
    const known = this.threadOf.get(rolloutId);
    if (known) return known;
    const least = this.threads.reduce((a, b) => (b.active < a.active ? b : a));
    // Remember recent rollouts only: a run makes millions of calls over its rollouts.
    if (this.threadOf.size >= 4096) this.threadOf.delete(this.threadOf.keys().next().value!);
    this.threadOf.set(rolloutId, least);
    return least;
  }

  private async run(req: GenerateRequest, onChunk?: (c: GenerateChunk) => void): Promise<GenerateResult> {
    if (this.closed) throw new EngineError("the onnx engine is closed");
    if (req.signal?.aborted) throw new EngineError("the generation was aborted by the client");
    const thread = this.threadFor(req.rolloutId);
    const { signal, ...plain } = req;
    const { id, done } = thread.call<GenerateResult>({ t: "generate", req: plain }, onChunk);
    const abort = () => thread.abort(id);
    signal?.addEventListener("abort", abort, { once: true });
    thread.active++;
    try {
      return await done;
    } finally {
      thread.active--;
      signal?.removeEventListener("abort", abort);
    }
  }

  async reload(version: string, path: string): Promise<void> {
    if (this.closed) throw new EngineError("the onnx engine is closed");
    const prepared = await Promise.allSettled(this.threads.map((t) => t.call({ t: "prepare", version, path }).done));
    const failed = prepared.find((p): p is PromiseRejectedResult => p.status === "rejected");
    if (failed) {
      await Promise.all(this.threads.map((t) => t.call({ t: "discard" }).done.catch(() => undefined)));
      throw failed.reason;
    }
    await Promise.all(this.threads.map((t) => t.call({ t: "commit" }).done));
    this.serving = Promise.resolve(version);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.threads.map((t) => t.stop()));
  }
}

/** Registry entry: builds the engine from the model spec; rejects with an EngineError if the model cannot load. */
export async function createOnnxEngine(spec: OnnxEngineSpec, _ctx?: unknown): Promise<OnnxEngine> {
  const engine = new OnnxEngine(spec);
  try {
    await engine.ready();
  } catch (e) {
    await engine.close();
    throw e;
  }
  return engine;
}
