import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineError, type GenerateRequest } from "../../src/runtime/engines/engine.js";
import { OnnxEngine } from "../../src/runtime/engines/onnx.js";
import type { TrainerWorker } from "../../src/runtime/training/trainer-process.js";
import { makeTinyModel, randomTrees, startWorker, treeBatch, type TinyModel } from "../training/helpers.js";
import { tempDir } from "../temp.js";

let v1: TinyModel;
let v2: TinyModel;
let worker: TrainerWorker;

beforeAll(async () => {
  const parent = tempDir("reins-onnx-");
  v1 = makeTinyModel(1, parent);
  v2 = makeTinyModel(2, parent);
  worker = await startWorker(v1);
});

afterAll(async () => {
  await worker?.stop();
});

function engineFor(m: TinyModel, seed = 5, parallel?: number): OnnxEngine {
  return new OnnxEngine({ type: "onnx", modelPath: m.dir, threads: 1, seed, ...(parallel ? { parallel } : {}) });
}

function request(
  over: Partial<GenerateRequest> & { maxTokens?: number; temperature?: number; topP?: number; stopIds?: number[]; seed?: number } = {},
): GenerateRequest {
  return {
    promptIds: over.promptIds ?? [257, 117, 115, 101, 114, 10, 104, 105, 258, 10, 257, 97, 10],
    sampling: {
      temperature: over.temperature ?? 1,
      topP: over.topP ?? 1,
      maxTokens: over.maxTokens ?? 24,
      stopIds: over.stopIds ?? [],
      seed: over.seed,
    },
    rolloutId: over.rolloutId ?? "r1",
    try: over.try ?? 1,
    seq: over.seq ?? 0,
    signal: over.signal,
  };
}

describe("onnx engine", () => {
  it("samples reproducibly from a seed and stops on stop ids or the token budget", async () => {
    const e = engineFor(v1);
    expect((await e.ready()).version).toBe(v1.version);
    const a = await e.generate(request());
    const b = await e.generate(request());
    const c = await e.generate(request({ seq: 1 }));
    expect(a.ids).toEqual(b.ids);
    expect(a.ids).not.toEqual(c.ids);
    expect(a.ids).toHaveLength(24);
    expect(a.finish).toBe("length");
    expect(a.weightsVersion).toBe(v1.version);
    expect(a.logprobs.every((x) => x <= 0 && Number.isFinite(x))).toBe(true);
    const stopAt = a.ids[5];
    const s = await e.generate(request({ stopIds: [stopAt] }));
    expect(s.finish).toBe("stop");
    expect(s.ids[s.ids.length - 1]).toBe(stopAt);
    expect(s.ids.length).toBeLessThanOrEqual(6);
    await e.close();
  });

  it("returns the untempered model's logprobs, equal to torch's to 1e-4 (KV cache vs full forward)", async () => {
    const e = engineFor(v1);
    const req = request({ maxTokens: 40, temperature: 0.7, topP: 0.9 });
    const out = await e.generate(req);
    const [torch] = await worker.client.computeLogprobs([[...req.promptIds, ...out.ids]]);
    const tail = torch.slice(req.promptIds.length) as number[];
    for (let i = 0; i < out.ids.length; i++) expect(Math.abs(out.logprobs[i] - tail[i])).toBeLessThan(1e-4);
    // Greedy decoding picks the argmax: every greedy token is at least as likely as any sampled one.
    const g = await e.generate(request({ temperature: 0, maxTokens: 8 }));
    const [tg] = await worker.client.computeLogprobs([[...req.promptIds, ...g.ids]]);
    expect(g.logprobs[0]).toBeCloseTo(tg[req.promptIds.length] as number, 4);
    await e.close();
  });

  it("loads the trainer's new weights and matches torch after a training step", async () => {
    await worker.client.forwardBackward(treeBatch(randomTrees(3, 3, v1.vocabSize)));
    await worker.client.optimStep({ learningRate: 5e-2 });
    const saved = await worker.client.saveWeights();
    const e = engineFor(v1);
    await e.reload(saved.version, saved.dir);
    const req = request({ maxTokens: 16 });
    const out = await e.generate(req);
    expect(out.weightsVersion).toBe(saved.version);
    const [torch] = await worker.client.computeLogprobs([[...req.promptIds, ...out.ids]]);
    const tail = torch.slice(req.promptIds.length) as number[];
    for (let i = 0; i < out.ids.length; i++) expect(Math.abs(out.logprobs[i] - tail[i])).toBeLessThan(1e-4);
    await e.close();
  });

  it("finishes in-flight generations on the version they started with across a reload", async () => {
    const ref1 = engineFor(v1);
    const ref2 = engineFor(v2);
    const long = request({ maxTokens: 400, rolloutId: "long" });
    const short = request({ maxTokens: 20, rolloutId: "short" });
    const want1 = await ref1.generate(long);
    const want2 = await ref2.generate(short);
    await ref1.close();
    await ref2.close();

    const e = engineFor(v1);
    await e.ready();
    const chunks: number[] = [];
    const inflight = e.generateStream(long, (c) => chunks.push(...c.ids));
    while (chunks.length < 5) await new Promise((r) => setTimeout(r, 1));
    await e.reload(v2.version, v2.dir);
    const atReload = chunks.length;
    const after = await e.generate(short);
    const done = await inflight;
    expect(atReload).toBeLessThan(400); // the reload happened while it was running
    expect(done.weightsVersion).toBe(v1.version);
    expect(done.ids).toEqual(want1.ids);
    expect(done.logprobs).toEqual(want1.logprobs);
    expect(after.weightsVersion).toBe(v2.version);
    expect(after.ids).toEqual(want2.ids);
    await e.close();
  });

  it("keeps serving the old version when a reload fails, and says why", async () => {
    const e = engineFor(v1);
    await e.ready();
    const bad = tempDir("reins-bad-");
    const err = await e.reload("nope", bad).then(
      () => null,
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(EngineError);
    expect((err as Error).message).toMatch(/no ONNX model/);
    writeFileSync(join(bad, "model.onnx"), "not a model");
    const err2 = await e.reload("nope", bad).then(
      () => null,
      (x: unknown) => x,
    );
    expect((err2 as Error).message).toMatch(/could not load/);
    const wrong = await e.reload("0000000000000000", v2.dir).then(
      () => null,
      (x: unknown) => x,
    );
    expect((wrong as Error).message).toMatch(/not the requested/);
    const out = await e.generate(request({ maxTokens: 4 }));
    expect(out.weightsVersion).toBe(v1.version);
    await e.close();
  });

  it("stops when the client aborts", async () => {
    const e = engineFor(v1);
    const ac = new AbortController();
    const p = e.generateStream(request({ maxTokens: 500, signal: ac.signal }), () => ac.abort());
    const err = await p.then(
      () => null,
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(EngineError);
    expect((err as Error).message).toMatch(/aborted/);
    await e.close();
  });

  it("generates on several threads at once, each generation as one thread alone would (its stream seeded by the request)", async () => {
    const one = engineFor(v1, 5, 1);
    const three = engineFor(v1, 5, 3);
    // Eight rollouts' calls at once, two calls each: the three threads share them.
    const reqs = Array.from({ length: 16 }, (_, k) => request({ rolloutId: `r${k % 8}`, seq: k >> 3, maxTokens: 32 }));
    const [alone, shared] = await Promise.all([Promise.all(reqs.map((r) => one.generate(r))), Promise.all(reqs.map((r) => three.generate(r)))]);
    expect(shared).toEqual(alone);
    expect(new Set(alone.map((r) => r.ids.join(","))).size).toBeGreaterThan(1);
    await Promise.all([one.close(), three.close()]);
    // A closed engine answers with an EngineError, not a hang.
    await expect(three.generate(request())).rejects.toBeInstanceOf(EngineError);
  });
});
