import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRng } from "../../src/compiler/contract/rng.js";
import { TrainerError } from "../../src/runtime/training/trainer-error.js";
import type { TrainerWorker } from "../../src/runtime/training/trainer-process.js";
import { writeBatchDir, writeBatchJson } from "../../src/runtime/training/batch-file.js";
import type { TrainingBatch } from "../../src/runtime/trajectories/batch.js";
import { applyCritic } from "../../src/runtime/trajectories/gae.js";
import { writeBatchDirectory } from "../../src/runtime/trajectories/io.js";
import { ALGORITHM, makeTinyModel, pathsBatch, randomTrees, runCheck, startWorker, treeBatch, type TinyModel } from "./helpers.js";
import { tempDir } from "../temp.js";

let model: TinyModel;
let worker: TrainerWorker;

beforeAll(async () => {
  model = makeTinyModel(7);
  worker = await startWorker(model);
});

afterAll(async () => {
  await worker?.stop();
});

async function refusal(p: Promise<unknown>): Promise<TrainerError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(TrainerError);
  return e as TrainerError;
}

describe("trainer worker", () => {
  it("answers health with the protocol version and the model's shape", async () => {
    const h = await worker.client.health();
    expect(h.protocolVersion).toBe(1);
    expect(h.step).toBe(0);
    expect(h.vocabSize).toBe(model.vocabSize);
    expect(h.weightsVersion).toBe(model.version);
    expect(h.device).toBe("cpu");
  });

  it("gives the same loss on a tree-packed batch and on its per-path batch", async () => {
    const trees = randomTrees(11, 4, model.vocabSize, { segments: 10 });
    const alg: TrainingBatch["algorithm"] = {
      ...ALGORITHM,
      entropyCoef: 0.01,
      correction: { type: "TIS", level: "sequence", cap: 2 },
      lossAggregation: "sequence-mean",
    };
    const tree = await worker.client.forwardBackward(treeBatch(trees, alg));
    const paths = await worker.client.forwardBackward(pathsBatch(trees, alg));
    expect(tree.tokens).toBe(paths.tokens);
    expect(tree.tokensProcessed).toBeLessThan(paths.tokensProcessed);
    expect(Math.abs(tree.loss - paths.loss)).toBeLessThan(1e-6);
    expect(tree.entropy).toBeCloseTo(paths.entropy!, 5);
    expect(tree.correction!.weightMean).toBeCloseTo(paths.correction!.weightMean, 6);
    await worker.client.optimStep();
  });

  it("has the same gradients on both layouts, for every correction and aggregation", () => {
    const trees = randomTrees(5, 3, model.vocabSize, { segments: 9 });
    // Rollout logprobs near the untrained model's (about -ln V), so that the masks keep most tokens.
    const rng = createRng(3);
    for (const t of trees) t.rolloutLogprobs = t.lossMask.map((m) => (m ? -Math.log(model.vocabSize) + (rng.next() - 0.5) * 0.4 : 0));
    const variants: TrainingBatch["algorithm"][] = [
      { ...ALGORITHM, klCoef: 0.05, entropyCoef: 0.01 },
      { ...ALGORITHM, correction: { type: "TIS", level: "token", cap: 1.5 }, lossAggregation: "sequence-sum" },
      { ...ALGORITHM, correction: { type: "MIS", level: "sequence", low: 0.01, high: 100 }, lossAggregation: "sequence-mean" },
      { ...ALGORITHM, correction: { type: "MIS", level: "geometric", low: 0.5, high: 2 } },
    ];
    const { cases } = runCheck<{
      cases: { lossDiff: number; maxGradDiff: number; maxGrad: number; treeTokens: number; pathsTokens: number; pathsMicroBatches: number }[];
    }>({
      op: "tree-vs-paths",
      modelDir: model.dir,
      cases: variants.map((alg) => ({ tree: treeBatch(trees, alg), paths: pathsBatch(trees, alg) })),
      microBatchTokens: 64, // several micro-batches on the per-path side
    });
    expect(cases).toHaveLength(variants.length);
    for (const r of cases) {
      expect(r.maxGrad).toBeGreaterThan(0);
      expect(r.lossDiff).toBeLessThan(1e-6);
      expect(r.maxGradDiff).toBeLessThan(1e-5);
      expect(r.treeTokens).toBeLessThan(r.pathsTokens);
      expect(r.pathsMicroBatches).toBeGreaterThan(1);
    }
  });

  it("reads the binary batch directory and the JSON file like the inline batch", async () => {
    const trees = randomTrees(13, 2, model.vocabSize);
    const dir = tempDir("reins-batch-");
    const inline = await worker.client.forwardBackward(treeBatch(trees));
    const fromDir = await worker.client.forwardBackward({ batchPath: writeBatchDir(join(dir, "b"), treeBatch(trees)) });
    const fromJson = await worker.client.forwardBackward({ batchPath: writeBatchJson(join(dir, "b.json"), pathsBatch(trees)) });
    await writeBatchDirectory(join(dir, "c"), pathsBatch(trees)); // the trajectories exporter's own writer
    const fromExporter = await worker.client.forwardBackward({ batchPath: join(dir, "c") });
    expect(fromDir.loss).toBeCloseTo(inline.loss, 6);
    expect(fromExporter.loss).toBeCloseTo(inline.loss, 6);
    expect(fromJson.loss).toBeCloseTo(inline.loss, 6);
    await worker.client.optimStep();
  });

  it("changes the weights with optim_step and publishes a new version", async () => {
    const seq = [[1, 2, 3, 4, 5, 6]];
    const before = await worker.client.computeLogprobs(seq);
    const saved0 = await worker.client.saveWeights();
    const trees = randomTrees(17, 3, model.vocabSize);
    await worker.client.forwardBackward(treeBatch(trees));
    const step = await worker.client.optimStep({ learningRate: 1e-2 });
    expect(step.gradNorm).toBeGreaterThan(0);
    expect(step.lr).toBe(1e-2);
    const after = await worker.client.computeLogprobs(seq);
    expect(after[0][3]).not.toBe(before[0][3]);
    const saved1 = await worker.client.saveWeights();
    expect(saved1.version).not.toBe(saved0.version);
    expect(saved1.step).toBe(step.step);
    expect(existsSync(saved1.onnxPath!)).toBe(true);
    expect(existsSync(join(saved1.dir, "READY"))).toBe(true);
    expect(existsSync(join(saved1.dir, "tokenizer.json"))).toBe(true);
    const again = await worker.client.saveWeights();
    expect(again.version).toBe(saved1.version);
  });

  it("writes safetensors by the format: header length, JSON header, contiguous little-endian tensors", async () => {
    const saved = await worker.client.saveWeights();
    const bytes = readFileSync(saved.safetensorsPath!);
    const n = Number(bytes.readBigUInt64LE(0));
    expect(n % 8).toBe(0);
    const header = JSON.parse(bytes.subarray(8, 8 + n).toString("utf8")) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
    const { __metadata__: meta, ...tensors } = header as Record<string, never>;
    expect(meta).toMatchObject({ format: "pt" });
    const entries = Object.entries(tensors as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>).sort(
      (a, b) => a[1].data_offsets[0] - b[1].data_offsets[0],
    );
    let end = 0;
    for (const [, t] of entries) {
      expect(t.dtype).toBe("F32");
      expect(t.data_offsets[0]).toBe(end);
      expect(t.data_offsets[1] - t.data_offsets[0]).toBe(4 * t.shape.reduce((a, b) => a * b, 1));
      end = t.data_offsets[1];
    }
    expect(8 + n + end).toBe(bytes.length);
    const names = entries.map(([k]) => k);
    expect(names).toContain("model.embed_tokens.weight");
    expect(names).toContain("model.layers.1.self_attn.q_norm.weight");
    expect(names).toContain("model.layers.1.mlp.gate_proj.weight");
    expect(names).not.toContain("lm_head.weight"); // tied to the embeddings
    const embed = tensors["model.embed_tokens.weight" as never] as { shape: number[] };
    expect(embed.shape).toEqual([model.vocabSize, 64]);
    // The norms start at 1.0: the little-endian float32 bytes say so.
    const norm = tensors["model.norm.weight" as never] as { data_offsets: [number, number] };
    const first = bytes.readFloatLE(8 + n + norm.data_offsets[0]);
    expect(first).toBeGreaterThan(0.5);
    const cfg = JSON.parse(readFileSync(join(saved.dir, "config.json"), "utf8")) as { architectures: string[]; vocab_size: number };
    expect(cfg.architectures).toEqual(["Qwen3ForCausalLM"]);
    expect(cfg.vocab_size).toBe(model.vocabSize);
  });

  it("refuses a batch with NaN in plain words and keeps no gradient", async () => {
    const trees = randomTrees(19, 2, model.vocabSize);
    const i = trees[0].lossMask.indexOf(1);
    trees[0].advantages[i] = Number.NaN;
    const e = await refusal(worker.client.forwardBackward(treeBatch(trees)));
    expect(e.code).toBe("TrainerRefused");
    expect(e.workerCode).toBe("NonFiniteBatch");
    expect(e.message).toMatch(/advantages.*refused/);
    const none = await refusal(worker.client.optimStep());
    expect(none.workerCode).toBe("NoGradients");
  });

  it("refuses a tree whose tokens are not depth-first, in plain words", async () => {
    // Token 3 hangs under token 1, but token 2 (a child of the root) already closed 1's subtree:
    // the O(S) tree mask needs each subtree contiguous, so such a packing is refused, not misread.
    const tree = {
      rollout: "r0",
      task: "t",
      harness: "h",
      tokens: [1, 2, 3, 4],
      parent: [-1, 0, 0, 1],
      position: [0, 1, 1, 2],
      lossMask: [0, 1, 1, 1],
      rolloutLogprobs: [0, -1, -1, -1],
      advantages: [0, 1, 1, 1],
      branch: [-1, -1, -1, -1],
    };
    const e = await refusal(worker.client.forwardBackward(treeBatch([tree])));
    expect(e.workerCode).toBe("BadBatch");
    expect(e.message).toMatch(/not in depth-first order: token 3 hangs under token 1/);
    expect((await worker.client.health()).pendingTokens).toBe(0);
  });

  it("refuses a step whose loss overflows, and discards the gradients", async () => {
    const good = randomTrees(23, 2, model.vocabSize);
    await worker.client.forwardBackward(treeBatch(good));
    const bad = randomTrees(29, 2, model.vocabSize, { segments: 12 });
    for (const t of bad) t.advantages = t.advantages.map((a, k) => (t.lossMask[k] ? -3e38 : a));
    const e = await refusal(worker.client.forwardBackward(treeBatch(bad, { ...ALGORITHM, lossAggregation: "sequence-sum" })));
    expect(e.workerCode).toBe("NonFiniteLoss");
    expect(e.message).toMatch(/inf|nan/i);
    expect((await worker.client.health()).pendingTokens).toBe(0);
    expect((await refusal(worker.client.optimStep())).workerCode).toBe("NoGradients");
  });

  it("trains the value head for PPO on the returns of the critic's GAE, weighted by valueCoef", async () => {
    const ppo = await startWorker(model, { valueHead: true });
    try {
      const trees = randomTrees(31, 2, model.vocabSize).map((t, k) => ({ ...t, reward: k }));
      const query = treeBatch(trees, { ...ALGORITHM, type: "PPO", valueCoef: 0.5 });
      // Without returns (no critic values asked) a PPO batch is refused.
      expect((await refusal(ppo.client.forwardBackward(query))).workerCode).toBe("MissingReturns");
      const values = await ppo.client.computeValues(query);
      expect(values.map((v) => v.length)).toEqual(trees.map((t) => t.tokens.length));
      expect(values.flat().every((v) => v === 0)).toBe(true); // the head starts at zero
      const { batch } = applyCritic(query, values, { gamma: 1, lambda: 0.95, normalize: true, positiveOnly: false });
      const m = await ppo.client.forwardBackward(batch);
      expect(m.valueLoss).toBeGreaterThan(0);
      // The value loss enters the objective with valueCoef: the same batch with a coefficient 10× larger
      // adds 9 × valueCoef × valueLoss more to the loss.
      const heavier = await ppo.client.forwardBackward({ ...batch, algorithm: { ...batch.algorithm, valueCoef: 5 } });
      expect(heavier.loss - m.loss).toBeCloseTo(4.5 * m.valueLoss!, 5);
      await ppo.client.optimStep({ learningRate: 1e-2 });
      const after = await ppo.client.computeValues(query);
      expect(after[0]).not.toEqual(values[0]);
      // A PPO batch needs the value head.
      expect((await refusal(worker.client.forwardBackward(batch))).workerCode).toBe("NoValueHead");
    } finally {
      await ppo.stop();
    }
  });

  it("writes the weights formats asked, and marks trained weights with trained.json", async () => {
    const fresh = await startWorker(model);
    try {
      const untrained = await fresh.client.saveWeights({ formats: ["onnx"] });
      expect(untrained.safetensorsPath).toBeNull();
      expect(existsSync(join(untrained.dir, "model.safetensors"))).toBe(false);
      expect(existsSync(join(untrained.dir, "model.onnx"))).toBe(true);
      expect(existsSync(join(untrained.dir, "trained.json"))).toBe(false);
      await fresh.client.forwardBackward(treeBatch(randomTrees(41, 1, model.vocabSize)));
      await fresh.client.optimStep({ learningRate: 1e-2 });
      const trained = await fresh.client.saveWeights({ formats: ["safetensors"] });
      expect(trained.onnxPath).toBeNull();
      expect(existsSync(trained.safetensorsPath!)).toBe(true);
      expect(JSON.parse(readFileSync(join(trained.dir, "trained.json"), "utf8"))).toEqual({ optimizerSteps: 1, version: trained.version });
    } finally {
      await fresh.stop();
    }
  });

  it("lowers the negative log-likelihood with the SFT objective", async () => {
    const trees = randomTrees(37, 1, model.vocabSize, { segments: 4 });
    const first = await worker.client.forwardBackward(treeBatch(trees), { objective: "sft" });
    await worker.client.optimStep({ learningRate: 1e-2 });
    for (let k = 0; k < 3; k++) {
      await worker.client.forwardBackward(treeBatch(trees), { objective: "sft" });
      await worker.client.optimStep({ learningRate: 1e-2 });
    }
    const last = await worker.client.forwardBackward(treeBatch(trees), { objective: "sft" });
    expect(last.nll!).toBeLessThan(first.nll! - 0.1);
    await worker.client.optimStep({ learningRate: 0 });
  });

  it("records the trainer's logprob of every trained token: the same values in both layouts, equal to compute_logprobs", async () => {
    const trees = randomTrees(43, 3, model.vocabSize, { segments: 8 });
    const dir = tempDir("reins-record-");
    const read = (file: string) =>
      readFileSync(file, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { rollout: string; leaf: number | null; logprobs: number[] });
    await worker.client.forwardBackward(treeBatch(trees), { recordLogprobs: join(dir, "tree.jsonl") });
    await worker.client.forwardBackward(pathsBatch(trees), { recordLogprobs: join(dir, "paths.jsonl") });
    // SFT writes nothing: there is no sampler to compare with.
    await worker.client.forwardBackward(treeBatch(trees), { objective: "sft", recordLogprobs: join(dir, "sft.jsonl") });
    expect(existsSync(join(dir, "sft.jsonl"))).toBe(false);
    const tree = read(join(dir, "tree.jsonl"));
    const paths = read(join(dir, "paths.jsonl"));
    const batch = pathsBatch(trees);
    for (const t of trees) {
      const row = tree.find((r) => r.rollout === t.rollout)!;
      expect(row.leaf).toBeNull();
      expect(row.logprobs.length).toBe(t.lossMask.filter((m) => m === 1).length);
      // The paths of the rollout, by leaf, give the tree's depth-first order.
      const mine = paths.filter((r) => r.rollout === t.rollout).sort((a, b) => a.leaf! - b.leaf!);
      const joined = mine.flatMap((r) => r.logprobs);
      expect(joined.length).toBe(row.logprobs.length);
      joined.forEach((v, i) => expect(Math.abs(v - row.logprobs[i])).toBeLessThan(1e-4));
      // Each path's values are the model's logprobs of that path's trained tokens.
      const samples = batch.paths!.filter((p) => p.rollout === t.rollout);
      const exact = await worker.client.computeLogprobs(samples.map((p) => p.tokens));
      samples.forEach((p, k) => {
        const want = p.tokens.map((_, i) => exact[k][i]).filter((_, i) => p.lossMask[i] === 1) as number[];
        const got = mine.find((r) => r.leaf === p.leaf)!.logprobs;
        expect(got.length).toBe(want.length);
        got.forEach((v, i) => expect(Math.abs(v - want[i])).toBeLessThan(1e-3));
      });
    }
    await worker.client.optimStep({ learningRate: 0 });
  });
});
