/**
 * Hugging Face checkpoints in the trainer: a tiny random Qwen3 that `transformers` itself writes
 * (bf16, sharded, tied and untied) gives transformers' own logprobs through the worker protocol,
 * and what the worker saves after a step is the same layout, which transformers loads back.
 * Needs the scale environment (scripts/install-python.sh); REINS_SKIP_SCALE_PYTHON=1 skips it.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TrainerError } from "../../src/runtime/training/trainer-error.js";
import { TrainerWorker, trainerRoot } from "../../src/runtime/training/trainer-process.js";
import { PYTHON, randomTrees, startChecks, treeBatch, type ChecksProcess } from "./helpers.js";
import { tempDir } from "../temp.js";

const SKIP = process.env.REINS_SKIP_SCALE_PYTHON === "1";
const NOTE = SKIP ? " (skipped: REINS_SKIP_SCALE_PYTHON=1; install with scripts/install-python.sh)" : "";
const SEQUENCES = [[1, 5, 9, 200, 17, 33, 64, 2, 7, 100, 101, 102], Array.from({ length: 40 }, (_, i) => (i * 37 + 11) % 256)];

function scalePython(): string {
  const python = execFileSync("bash", ["scripts/install-python.sh", "--print"], { cwd: trainerRoot(), encoding: "utf8" }).trim();
  if (!existsSync(python)) throw new Error(`${python} is missing: run scripts/install-python.sh (or set REINS_SKIP_SCALE_PYTHON=1)`);
  return python;
}

interface Reference {
  logprobs: (number | null)[][];
  missing: string[];
  unexpected: string[];
}
interface Described {
  files: string[];
  dtypes: string[];
  tensors: string[];
  config: Record<string, unknown>;
}

function start(python: string, modelDir: string, learningRate = 1e-3): Promise<TrainerWorker> {
  return TrainerWorker.start({ modelDir, outDir: tempDir("reins-trainer-"), python, threads: 1, learningRate, startTimeoutMs: 180_000 });
}

/** Largest relative difference between two logprob tables (the first token of each is null). */
function relDiff(a: (number | null)[][], b: (number | null)[][]): number {
  let worst = 0;
  a.forEach((row, i) =>
    row.forEach((x, j) => {
      if (j === 0) return;
      const y = b[i]![j]!;
      worst = Math.max(worst, Math.abs(x! - y) / Math.abs(y));
    }),
  );
  return worst;
}

function absDiff(a: (number | null)[][], b: (number | null)[][]): number {
  return Math.max(...a.flatMap((row, i) => row.slice(1).map((x, j) => Math.abs(x! - b[i]![j + 1]!))));
}

function spread(rows: (number | null)[][]): number {
  const xs = rows.flatMap((r) => r.slice(1) as number[]);
  return Math.max(...xs) - Math.min(...xs);
}

async function caught(p: Promise<unknown>): Promise<TrainerError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(TrainerError);
  return e as TrainerError;
}

describe.skipIf(SKIP)(`Hugging Face Qwen3 checkpoints in the trainer${NOTE}`, () => {
  let python: string;
  const ckpt: Record<"untied" | "tied", string> = { untied: "", tied: "" };
  const reference: Partial<Record<"untied" | "tied", Reference>> = {};

  // One process of the scale environment's python answers the file's Hugging Face requests (hf_reference.py).
  let checks: ChecksProcess;
  const hf = <T>(_python: string, request: object) => checks.ask<T>(request);

  beforeAll(async () => {
    python = scalePython();
    checks = startChecks(python, { OMP_NUM_THREADS: "1" });
    const parent = tempDir("reins-hf-");
    for (const variant of ["untied", "tied"] as const) {
      ckpt[variant] = join(parent, variant);
      const made = await hf<{ reference: Reference }>(python, {
        op: "hf-write-tiny",
        out: ckpt[variant],
        seed: variant === "tied" ? 2 : 1,
        tied: variant === "tied",
        maxShardSize: "64KB",
        sequences: SEQUENCES,
      });
      reference[variant] = made.reference;
    }
  }, 300_000);

  afterAll(async () => {
    await checks?.stop();
  });

  it("a sharded bf16 checkpoint written by transformers gives transformers' own logprobs (untied and tied)", async () => {
    for (const variant of ["untied", "tied"] as const) {
      const files = readdirSync(ckpt[variant]);
      expect(files.filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f)).length).toBeGreaterThan(2);
      expect(files).toContain("model.safetensors.index.json");
      const ref = reference[variant]!;
      expect(ref.missing).toEqual([]);
      const w = await start(python, ckpt[variant]);
      try {
        expect((await w.client.health()).vocabSize).toBe(265);
        const mine = await w.client.computeLogprobs(SEQUENCES);
        // Random weights at scale 0.25: logprobs vary by whole nats, so equality is not trivial.
        expect(spread(ref.logprobs)).toBeGreaterThan(1);
        expect(relDiff(mine, ref.logprobs)).toBeLessThan(1e-5);
      } finally {
        await w.stop();
      }
    }
  }, 600_000);

  it("Debian's python reads the same shards with the project's codec and gets the same logprobs", async () => {
    const ref = reference.untied!;
    const w = await start(PYTHON, ckpt.untied);
    try {
      expect(relDiff(await w.client.computeLogprobs(SEQUENCES), ref.logprobs)).toBeLessThan(1e-5);
    } finally {
      await w.stop();
    }
  }, 300_000);

  it("reads a config.json in transformers 4.x keys (torch_dtype, rope_theta) and writes those keys back", async () => {
    const dir = join(tempDir("reins-hf-4x-"), "ckpt");
    cpSync(ckpt.untied, dir, { recursive: true });
    const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as Record<string, unknown>;
    const theta = (config.rope_parameters as { rope_theta: number }).rope_theta;
    delete config.rope_parameters;
    delete config.dtype;
    delete config.layer_types;
    Object.assign(config, { torch_dtype: "bfloat16", rope_theta: theta, rope_scaling: null, transformers_version: "4.51.0" });
    writeFileSync(join(dir, "config.json"), JSON.stringify(config));
    const w = await start(PYTHON, dir);
    try {
      expect(relDiff(await w.client.computeLogprobs(SEQUENCES), reference.untied!.logprobs)).toBeLessThan(1e-5);
      const saved = JSON.parse(readFileSync(join((await w.client.saveWeights()).dir, "config.json"), "utf8")) as Record<string, unknown>;
      expect(saved.torch_dtype).toBe("bfloat16");
      expect(saved.rope_theta).toBe(theta);
      expect(saved.dtype).toBeUndefined();
    } finally {
      await w.stop();
    }
  }, 300_000);

  it("after a training step save_weights writes the checkpoint's layout in bf16, which transformers loads", async () => {
    const source = await hf<Described>(python, { op: "hf-describe", modelDir: ckpt.untied });
    const before = reference.untied!;
    expect(source.dtypes).toEqual(["BF16"]);
    const w = await start(python, ckpt.untied, 1e-2);
    let saved: string;
    let trained: (number | null)[][];
    try {
      await w.client.forwardBackward(treeBatch(randomTrees(5, 3, 265)));
      await w.client.optimStep();
      const r = await w.client.saveWeights();
      saved = r.dir;
      expect(r.onnxPath).toBeNull(); // a Hugging Face checkpoint is published as safetensors only
      expect(r.safetensorsPath).toBe(join(saved, "model.safetensors.index.json"));
      trained = await w.client.computeLogprobs(SEQUENCES);

      // maxShardBytes: one file when everything fits
      const single = await w.client.saveWeights({ maxShardBytes: 1 << 20 });
      expect(readdirSync(single.dir).filter((f) => f.endsWith(".safetensors"))).toEqual(["model.safetensors"]);
      expect(single.safetensorsPath).toBe(join(single.dir, "model.safetensors"));
    } finally {
      await w.stop();
    }
    const out = await hf<Described>(python, { op: "hf-describe", modelDir: saved });
    expect(out.files).toEqual(source.files); // the same shards, by name
    expect(out.tensors).toEqual(source.tensors);
    expect(out.dtypes).toEqual(["BF16"]);
    expect(out.config.dtype).toBe("bfloat16");
    expect(out.config.rope_parameters).toEqual(source.config.rope_parameters);
    const index = JSON.parse(readFileSync(join(saved, "model.safetensors.index.json"), "utf8")) as { weight_map: Record<string, string> };
    expect(Object.keys(index.weight_map).sort()).toEqual(source.tensors);
    for (const f of ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json", "READY", "trained.json"]) {
      expect(existsSync(join(saved, f))).toBe(true);
    }

    const reloaded = await hf<Reference>(python, { op: "hf-logprobs", modelDir: saved, sequences: SEQUENCES });
    expect(reloaded.missing).toEqual([]);
    expect(reloaded.unexpected).toEqual([]);
    // The bf16 copy is the trained model: its rounding moves logprobs far less than the step did.
    const rounding = absDiff(reloaded.logprobs, trained);
    expect(rounding).toBeLessThan(0.1);
    expect(absDiff(reloaded.logprobs, before.logprobs)).toBeGreaterThan(3 * rounding);
    // A worker started from the saved directory computes exactly transformers' logprobs of it.
    const again = await start(python, saved);
    try {
      expect(relDiff(await again.client.computeLogprobs(SEQUENCES), reloaded.logprobs)).toBeLessThan(1e-5);
      expect((await again.client.health()).weightsVersion).toBe(readFileSync(join(saved, "READY"), "utf8").trim());
    } finally {
      await again.stop();
    }
  }, 600_000);

  it("a float32 checkpoint is written back in float32, which transformers loads with the same logprobs", async () => {
    const dir = join(tempDir("reins-hf-f32-"), "ckpt");
    cpSync(ckpt.untied, dir, { recursive: true });
    const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as Record<string, unknown>;
    writeFileSync(join(dir, "config.json"), JSON.stringify({ ...config, dtype: "float32" }));
    const w = await start(PYTHON, dir); // Debian's python: the codec writes the shards
    let saved: string;
    try {
      saved = (await w.client.saveWeights()).dir;
    } finally {
      await w.stop();
    }
    const out = await hf<Described>(python, { op: "hf-describe", modelDir: saved });
    expect(out.dtypes).toEqual(["F32"]);
    expect(out.files.length).toBeGreaterThan(2);
    const ref = await hf<Reference>(python, { op: "hf-logprobs", modelDir: saved, sequences: SEQUENCES });
    expect(ref.missing).toEqual([]);
    expect(relDiff(ref.logprobs, reference.untied!.logprobs)).toBeLessThan(1e-5);
  }, 300_000);

  it("a tied checkpoint is saved tied: no lm_head tensor, transformers loads it with nothing missing", async () => {
    const w = await start(python, ckpt.tied);
    let dir: string;
    try {
      dir = (await w.client.saveWeights()).dir;
    } finally {
      await w.stop();
    }
    const out = await hf<Described>(python, { op: "hf-describe", modelDir: dir });
    expect(out.tensors).not.toContain("lm_head.weight");
    expect(out.config.tie_word_embeddings).toBe(true);
    const ref = await hf<Reference>(python, { op: "hf-logprobs", modelDir: dir, sequences: SEQUENCES });
    const src = reference.tied!;
    expect(ref.missing).toEqual([]);
    // Untrained weights go out in bf16 exactly as they came in.
    expect(relDiff(ref.logprobs, src.logprobs)).toBe(0);
  }, 300_000);

  it("refuses a malformed checkpoint in words: a missing shard, an unsupported config field", async () => {
    const parent = tempDir("reins-hf-bad-");
    const shard = join(parent, "shard");
    cpSync(ckpt.untied, shard, { recursive: true });
    rmSync(join(shard, "model-00003-of-00005.safetensors"));
    const e = await caught(start(PYTHON, shard));
    expect(e.code).toBe("TrainerStartFailed");
    expect(e.message).toMatch(/names the shard model-00003-of-00005\.safetensors, which is not in .*BadCheckpoint/);
    expect(e.message).not.toMatch(/Traceback/);

    const cases: [string, (c: Record<string, unknown>) => void, RegExp][] = [
      [
        "rope",
        (c) => {
          c.rope_parameters = { rope_type: "yarn", rope_theta: 1e6, factor: 4 };
        },
        /`rope_parameters\.rope_type` is "yarn"/,
      ],
      [
        "window",
        (c) => {
          c.use_sliding_window = true;
        },
        /`use_sliding_window` is true: sliding-window attention/,
      ],
      [
        "bias",
        (c) => {
          c.attention_bias = true;
        },
        /`attention_bias` is true/,
      ],
      [
        "llama",
        (c) => {
          c.model_type = "llama";
          c.architectures = ["LlamaForCausalLM"];
        },
        /`model_type` is "llama"/,
      ],
    ];
    for (const [name, change, message] of cases) {
      const dir = join(parent, name);
      cpSync(ckpt.untied, dir, { recursive: true });
      const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as Record<string, unknown>;
      change(config);
      writeFileSync(join(dir, "config.json"), JSON.stringify(config));
      const err = await caught(start(PYTHON, dir));
      expect(err.message).toMatch(message);
      expect(err.message).toMatch(/UnsupportedCheckpoint/);
      expect(err.message).not.toMatch(/Traceback/);
    }
  }, 300_000);
});
