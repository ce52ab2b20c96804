/**
 * The onnx engine against onnxruntime-node called directly, on the same model and KV-cache graph.
 *
 *   node --import tsx bench/onnx-engine.ts [--tokens 256] [--threads 1] [--concurrency 4] [--parallel 2]
 *
 * "direct" is the minimal loop: session.run with the cache, greedy argmax on the last row.
 * The engine runs the same loop plus sampling, logprobs, abort checks and version bookkeeping.
 * Also measured: the engine at temperature 1, and with several generations in flight at once on
 * one generating thread (parallel 1) and on `--parallel` threads (the default 2).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { OnnxEngine } from "../src/runtime/engines/onnx.js";
import { argmax } from "../src/runtime/policy/sampler.js";
import { trainerRoot } from "../src/runtime/training/trainer-process.js";

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}

const tokens = arg("tokens", 256);
const threads = arg("threads", 1);
const concurrency = arg("concurrency", 4);
const parallel = arg("parallel", 2);
const repeats = 5;
const dir = join(mkdtempSync(join(tmpdir(), "reins-bench-onnx-")), "model");
const info = JSON.parse(
  execFileSync("/usr/bin/python3", ["-m", "trainers.torch.init_model", "--out", dir, "--seed", "0"], {
    cwd: trainerRoot(),
    env: { ...process.env, PYTHONPATH: trainerRoot(), PYTHONDONTWRITEBYTECODE: "1" },
    encoding: "utf8",
  }),
) as { parameters: number; vocabSize: number };
const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as {
  num_hidden_layers: number;
  num_key_value_heads: number;
  head_dim: number;
};
const prompt = Array.from({ length: 64 }, (_, i) => (i * 7) % 250);

const i64 = (v: number[], dims: number[]) =>
  new ort.Tensor(
    "int64",
    BigInt64Array.from(v, (x) => BigInt(x)),
    dims,
  );

async function direct(session: ort.InferenceSession): Promise<number> {
  const feeds: Record<string, ort.Tensor> = {};
  for (let l = 0; l < config.num_hidden_layers; l++) {
    for (const k of ["key", "value"])
      feeds[`past_key_values.${l}.${k}`] = new ort.Tensor("float32", new Float32Array(0), [1, config.num_key_value_heads, 0, config.head_dim]);
  }
  let ids = prompt;
  let start = 0;
  const t0 = performance.now();
  for (let n = 0; n < tokens; n++) {
    feeds.input_ids = i64(ids, [1, ids.length]);
    feeds.attention_mask = i64(new Array(start + ids.length).fill(1), [1, start + ids.length]);
    feeds.position_ids = i64(
      ids.map((_, i) => start + i),
      [1, ids.length],
    );
    const out = await session.run(feeds);
    const lp = out.logprobs;
    const v = lp.dims[2];
    const data = lp.data as Float32Array;
    const next = argmax(data.subarray((ids.length - 1) * v, ids.length * v));
    for (let l = 0; l < config.num_hidden_layers; l++) {
      feeds[`past_key_values.${l}.key`] = out[`present.${l}.key`];
      feeds[`past_key_values.${l}.value`] = out[`present.${l}.value`];
    }
    start += ids.length;
    ids = [next];
  }
  return (performance.now() - t0) / 1000;
}

async function viaEngine(engine: OnnxEngine, temperature: number, parallel: number): Promise<number> {
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, (_, k) =>
      engine.generate({ promptIds: prompt, sampling: { temperature, topP: 1, maxTokens: tokens, stopIds: [] }, rolloutId: `b${k}`, try: 1, seq: 0 }),
    ),
  );
  return (performance.now() - t0) / 1000;
}

const session = await ort.InferenceSession.create(join(dir, "model.onnx"), { intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: "all" });
const engine = new OnnxEngine({ type: "onnx", modelPath: dir, threads, parallel: 1, seed: 1 });
const threaded = new OnnxEngine({ type: "onnx", modelPath: dir, threads, parallel, seed: 1 });
await Promise.all([engine.ready(), threaded.ready()]);
await direct(session); // warm-up
await viaEngine(engine, 0, 1);
await viaEngine(threaded, 1, concurrency);
const rows: { name: string; secs: number[]; tokens: number }[] = [
  { name: "onnxruntime-node direct, greedy", secs: [], tokens },
  { name: "onnx engine, greedy", secs: [], tokens },
  { name: "onnx engine, temperature 1", secs: [], tokens },
  { name: `onnx engine, ${concurrency} in flight, temperature 1`, secs: [], tokens: tokens * concurrency },
  { name: `onnx engine, parallel ${parallel}, ${concurrency} in flight, temperature 1`, secs: [], tokens: tokens * concurrency },
];
for (let r = 0; r < repeats; r++) {
  rows[0].secs.push(await direct(session));
  rows[1].secs.push(await viaEngine(engine, 0, 1));
  rows[2].secs.push(await viaEngine(engine, 1, 1));
  rows[3].secs.push(await viaEngine(engine, 1, concurrency));
  rows[4].secs.push(await viaEngine(threaded, 1, concurrency));
}
await Promise.all([engine.close(), threaded.close()]);
await session.release();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`model: ${info.parameters} parameters, vocab ${info.vocabSize}; prompt ${prompt.length} tokens, ${tokens} generated; ORT threads ${threads}`);
console.log("| run | tokens | seconds (median) | tokens/s |\n|---|---|---|---|");
const rate = rows.map((r) => r.tokens / median(r.secs));
rows.forEach((r, i) => console.log(`| ${r.name} | ${r.tokens} | ${median(r.secs).toFixed(3)} | ${rate[i].toFixed(0)} |`));
console.log(
  `engine greedy / direct: ${(rate[1] / rate[0]).toFixed(2)}; engine sampling / direct: ${(rate[2] / rate[0]).toFixed(2)}; ${concurrency} in flight / one: ${(rate[3] / rate[2]).toFixed(2)}; parallel ${parallel} / parallel 1, ${concurrency} in flight: ${(rate[4] / rate[3]).toFixed(2)}`,
);
