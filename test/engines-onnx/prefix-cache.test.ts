/**
 * The onnx engine's prefix KV cache on a policy of the quickstart's shape (4 layers, d=128, a BPE
 * tokenizer with 400 merges): what a GRPO step through a real harness sends — many rollouts'
 * prompts sharing a long system prompt, and second calls extending the first — gives the same
 * greedy tokens and logprobs as without the cache, prefilling only what is new, and never
 * reuses a state across weights versions.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import { createRng } from "../../src/compiler/contract/rng.js";
import type { GenerateRequest, GenerateResult } from "../../src/runtime/engines/engine.js";
import { OnnxEngine } from "../../src/runtime/engines/onnx.js";
import { makeTinyModel, type TinyModel } from "../training/helpers.js";
import { tempDir } from "../temp.js";

const QUICKSTART_SHAPE = ["--layers", "4", "--hidden", "128", "--heads", "4", "--intermediate", "384", "--merges", "400"];
let v1: TinyModel;
let v2: TinyModel;
const engines: OnnxEngine[] = [];

beforeAll(() => {
  const parent = tempDir("reins-prefix-");
  const corpus = ["--corpus", join(process.cwd(), "README.md")];
  v1 = makeTinyModel(1, parent, [...QUICKSTART_SHAPE, ...corpus]);
  v2 = makeTinyModel(2, parent, [...QUICKSTART_SHAPE, ...corpus]);
});

afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

function engine(m: TinyModel, prefixCache?: { entries: number; maxMiB: number }): OnnxEngine {
  const e = new OnnxEngine({ type: "onnx", modelPath: m.dir, threads: 1, parallel: 1, seed: 3, ...(prefixCache ? { prefixCache } : {}) });
  engines.push(e);
  return e;
}

function ids(seed: number, n: number, vocab: number): number[] {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => Math.floor(rng.next() * (vocab - 16)));
}

function greedy(promptIds: number[], rolloutId: string, maxTokens = 12): GenerateRequest {
  return { promptIds, sampling: { temperature: 0, topP: 1, maxTokens, stopIds: [] }, rolloutId, try: 1, seq: 0 };
}

function expectSame(a: GenerateResult, b: GenerateResult): void {
  expect(a.ids).toEqual(b.ids);
  for (let i = 0; i < a.ids.length; i++) expect(Math.abs(a.logprobs[i] - b.logprobs[i])).toBeLessThan(1e-4);
}

describe("the onnx engine's prefix cache", () => {
  it("gives the same greedy tokens and logprobs as a full prefill, and prefills only what is new", async () => {
    const system = ids(1, 700, v1.vocabSize); // the harness's system prompt and tool schema
    const prompts = [0, 1, 2, 3].map((k) => [...system, ...ids(100 + k, 30, v1.vocabSize)]); // one instruction per task
    const plain = engine(v1);
    const cached = engine(v1, { entries: 8, maxMiB: 64 });
    const firsts: GenerateResult[] = [];
    for (const [k, p] of prompts.entries()) {
      const want = await plain.generate(greedy(p, `r${k}`));
      const got = await cached.generate(greedy(p, `r${k}`));
      expectSame(got, want);
      firsts.push(got);
    }
    let stats = await cached.prefixCacheStats();
    expect(stats).toMatchObject({ version: v1.version, lookups: 4, hits: 3, reusedTokens: 3 * 700, prefilledTokens: 730 + 3 * 30 });
    // Second calls extend the first (prompt, completion, a tool result): they reuse the whole first
    // call except the completion's last token, which was sampled but never fed back.
    for (const [k, p] of prompts.entries()) {
      const second = [...p, ...firsts[k].ids, ...ids(200 + k, 25, v1.vocabSize)];
      expectSame(await cached.generate(greedy(second, `r${k}`)), await plain.generate(greedy(second, `r${k}`)));
    }
    stats = await cached.prefixCacheStats();
    expect(stats!.hits).toBe(7);
    expect(stats!.reusedTokens).toBe(3 * 700 + 4 * (730 + 12 - 1));
    expect(stats!.entries).toBeLessThanOrEqual(8);
    expect(await plain.prefixCacheStats()).toBeNull();
  });

  it("lets calls arriving together wait for the prefill of the prefix they share rather than repeat it", async () => {
    const system = ids(2, 700, v1.vocabSize);
    const prompts = [0, 1, 2, 3].map((k) => [...system, ...ids(150 + k, 30, v1.vocabSize)]);
    const plain = engine(v1);
    const cached = engine(v1, { entries: 8, maxMiB: 64 });
    const [want, got] = await Promise.all([
      Promise.all(prompts.map((p, k) => plain.generate(greedy(p, `r${k}`)))),
      Promise.all(prompts.map((p, k) => cached.generate(greedy(p, `r${k}`)))),
    ]);
    got.forEach((g, k) => expectSame(g, want[k]));
    expect(await cached.prefixCacheStats()).toMatchObject({ lookups: 4, hits: 3, reusedTokens: 3 * 700, prefilledTokens: 730 + 3 * 30 });
  });

  it("keeps at most `entries` sequences and `maxMiB` of KV", async () => {
    const few = engine(v1, { entries: 2, maxMiB: 64 });
    for (let k = 0; k < 4; k++) await few.generate(greedy(ids(300 + k, 50, v1.vocabSize), `r${k}`, 4));
    expect((await few.prefixCacheStats())!.entries).toBe(2);
    // 4 layers × (key + value) × 4 heads × 32 dims × 4 bytes = 4 KiB a token: 400 tokens exceed 1 MiB.
    const small = engine(v1, { entries: 8, maxMiB: 1 });
    const long = ids(400, 400, v1.vocabSize);
    await small.generate(greedy(long, "a", 4));
    await small.generate(greedy(long, "b", 4));
    expect(await small.prefixCacheStats()).toMatchObject({ entries: 0, bytes: 0, hits: 0, reusedTokens: 0 });
  });

  it("never reuses a state across weights versions, even from a generation finishing after the reload", async () => {
    const prompt = [...ids(500, 300, v1.vocabSize), 7];
    const cached = engine(v1, { entries: 8, maxMiB: 64 });
    await cached.generate(greedy(prompt, "warm", 4));
    // A long generation on v1 is in flight while v2 is swapped in; it finishes on v1 and stores nothing in v2's cache.
    let reloaded = false;
    const inFlight = cached.generate(greedy([...prompt, 9], "slow", 200)).then((r) => ({ ...r, afterReload: reloaded }));
    await cached.reload(v2.version, v2.dir);
    reloaded = true;
    const old = await inFlight;
    expect(old.afterReload).toBe(true);
    expect(old.weightsVersion).toBe(v1.version);
    expect(await cached.prefixCacheStats()).toMatchObject({ version: v2.version, lookups: 0, entries: 0 });
    const after = await cached.generate(greedy([...prompt, 9, ...old.ids.slice(0, 50)], "next"));
    expect(after.weightsVersion).toBe(v2.version);
    expect(await cached.prefixCacheStats()).toMatchObject({ lookups: 1, hits: 0, reusedTokens: 0 });
    expectSame(after, await engine(v2).generate(greedy([...prompt, 9, ...old.ids.slice(0, 50)], "next")));
  });

  it("is off unless the Model asks for it; `prefixCache: {}` keeps 8 sequences and 256 MiB", () => {
    const plan = (engineYaml: string) => {
      const dir = tempDir("reins-prefix-spec-");
      mkdirSync(join(dir, "policy"));
      writeFileSync(
        join(dir, "eval.yaml"),
        `apiVersion: reins/v1alpha1
kind: Model
metadata: {name: small}
spec:
  tokenizer: {type: qwen3}
  engine: {type: onnx, modelPath: policy${engineYaml}}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: h}
spec: {dialect: openai-chat, command: [agent, "{{instruction}}"]}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec: {instruction: x, verifier: {checks: [{fileExists: a.txt}]}}
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: e}
spec: {model: {name: small}, tasks: [{name: t}], harnesses: [{name: h}]}
`,
      );
      return compilePlan(["eval.yaml"], { cwd: dir, env: {}, projectRoot: "." });
    };
    expect(plan("").value!.model!.engine).not.toHaveProperty("prefixCache");
    expect(plan(", prefixCache: {}").value!.model!.engine).toMatchObject({ prefixCache: { entries: 8, maxMiB: 256 } });
    expect(plan(", prefixCache: {entries: 32, maxMiB: 1024}").value!.model!.engine).toMatchObject({ prefixCache: { entries: 32, maxMiB: 1024 } });
    const bad = plan(", prefixCache: {entries: 0, size: 3}");
    expect(bad.value).toBeUndefined();
    expect(bad.diagnostics.map((d) => d.message).join("\n")).toMatch(/entries[\s\S]*size|size[\s\S]*entries/);
  });
});
