/**
 * Tokenizing off the shared event loop. The proxy serves every rollout from one thread; a prompt
 * of 512K characters takes the tokenizer 1–7 s (BPE on one long run of a letter is the slow case),
 * and nothing else would be answered meanwhile. Texts up to `inlineChars` together are tokenized in
 * place (8K characters: ~25 ms for code or prose, ~115 ms for the worst text, one run of a letter);
 * longer ones go to worker threads that load the same tokenizer (once, ~1.3 s of CPU, at a lower
 * priority than the event loop). The first such text of a proxy starts the first worker.
 *
 * Fairness: jobs are queued per owner (the proxy passes the rollout) and started round-robin, at
 * most one per owner at a time, so one rollout sending huge prompts occupies one worker while the
 * others serve everyone else. A worker that cannot load the tokenizer makes the pool tokenize in
 * place (slower for others, never wrong: both sides run the same tokenizer package).
 *
 * DECISION — worker threads, not chunks with yields: the tokenizer's cost is per pre-token word,
 * and one word (a run of one letter) can be the whole text, so no chunking can bound a slice.
 */
import { Worker } from "node:worker_threads";
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { readTokenizerTexts, type Tokenizer, type TokenizerTexts } from "./tokenizer.js";

export interface TokenizePool {
  /** Token ids of each text (same as tokenizer.encode), computed off the event loop when long. */
  encode(texts: readonly string[], owner: object): Promise<number[][]>;
  close(): Promise<void>;
}

interface Job {
  texts: readonly string[];
  owner: object;
  resolve(ids: number[][]): void;
  reject(err: Error): void;
}

interface Slot {
  worker: Worker;
  job?: Job;
}

export const INLINE_CHARS = 8192;

export function createTokenizePool(
  spec: ResolvedModel["tokenizer"],
  tokenizer: Tokenizer,
  opts: { workers?: number; inlineChars?: number } = {},
): TokenizePool {
  const size = Math.max(1, opts.workers ?? 2);
  const inlineChars = opts.inlineChars ?? INLINE_CHARS;
  const queues = new Map<object, Job[]>();
  const busy = new Set<object>();
  const slots: Slot[] = [];
  let broken = false;
  let closed = false;
  let nextId = 0;

  const inline = (texts: readonly string[]): number[][] => texts.map((t) => tokenizer.encode(t));

  // A worker is given the tokenizer's texts, read and checked here (./tokenizer.ts), never a path to open.
  let texts: TokenizerTexts | undefined;

  function spawn(): Slot | undefined {
    if (spec && spec.type !== "qwen3" && !texts) {
      try {
        texts = readTokenizerTexts(spec);
      } catch {
        broken = true;
        return undefined;
      }
    }
    const worker = new Worker(new URL("./tokenize-worker.mjs", import.meta.url), { workerData: { tokenizer: spec, texts } });
    worker.unref();
    const slot: Slot = { worker };
    worker.on("message", (msg: { id: number; ids?: number[][]; error?: string }) => {
      const job = slot.job;
      if (!job) return;
      slot.job = undefined;
      busy.delete(job.owner);
      if (msg.ids) job.resolve(msg.ids);
      else {
        // The worker could not tokenize (its tokenizer failed to load): do it here, correctly.
        broken = true;
        runInline(job);
      }
      schedule();
    });
    worker.on("error", () => {
      broken = true;
      const i = slots.indexOf(slot);
      if (i >= 0) slots.splice(i, 1);
      if (slot.job) {
        busy.delete(slot.job.owner);
        runInline(slot.job);
      }
      schedule();
    });
    slots.push(slot);
    return slot;
  }

  function runInline(job: Job): void {
    try {
      job.resolve(inline(job.texts));
    } catch (err) {
      job.reject(err as Error);
    }
  }

  /** Start queued jobs on free workers, owners in turn, one running job per owner. */
  function schedule(): void {
    for (const [owner, queue] of queues) {
      if (busy.has(owner)) continue;
      if (broken || closed) {
        queues.delete(owner);
        for (const job of queue) runInline(job);
        continue;
      }
      let slot = slots.find((s) => !s.job);
      if (!slot && slots.length < size) slot = spawn();
      if (broken) {
        queues.delete(owner);
        for (const job of queue) runInline(job);
        continue;
      }
      if (!slot) return;
      const job = queue.shift()!;
      if (queue.length === 0) queues.delete(owner);
      else {
        // Round-robin: this owner goes to the back of the line.
        queues.delete(owner);
        queues.set(owner, queue);
      }
      busy.add(owner);
      slot.job = job;
      slot.worker.postMessage({ id: nextId++, texts: job.texts });
    }
  }

  return {
    encode(texts, owner) {
      let chars = 0;
      for (const t of texts) chars += t.length;
      if (chars <= inlineChars || broken || closed) return Promise.resolve(inline(texts));
      return new Promise<number[][]>((resolve, reject) => {
        const queue = queues.get(owner) ?? [];
        queue.push({ texts, owner, resolve, reject });
        queues.set(owner, queue);
        schedule();
      });
    },
    async close() {
      closed = true;
      const running = slots.splice(0);
      for (const s of running) if (s.job) runInline(s.job);
      schedule();
      await Promise.all(running.map((s) => s.worker.terminate()));
    },
  };
}
