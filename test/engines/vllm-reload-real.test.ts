/**
 * vLLM's in-place reload, through the vllm engine's reload (pause → collective_rpc reload_weights
 * → reset_prefix_cache → update_weight_version → resume), on a real server: what a server you run
 * (baseUrl) gets for each version `reins run` publishes. A server started on weights A scores a
 * fixed sequence, reloads weights B (A's with noise) in place and scores it again; a second server
 * started on B scores it the same as the reloaded one, and A's scores differ. The policy here has its own
 * logits head (tie_word_embeddings false): with a tied head vLLM's CPU build keeps the old head
 * (measured; which is why a served tied policy is restarted instead, see policy-engine.ts).
 * Needs the scale environment (bash scripts/install-python.sh); REINS_SKIP_SCALE_PYTHON=1 skips it.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureInitialPolicy } from "../../src/runtime/control/policy.js";
import { createEngine } from "../../src/runtime/engines/registry.js";
import { defaultServePython, startVllmServer } from "../../src/runtime/engines/vllm-server.js";
import { tempDir } from "../temp.js";

const SKIP = process.env.REINS_SKIP_SCALE_PYTHON === "1";
const NOTE = SKIP ? " (skipped: REINS_SKIP_SCALE_PYTHON=1; install vLLM's CPU build with scripts/install-python.sh)" : "";

/** Untied copies of the policy in `src`: `a` as it is, `b` with noise added to every weight. */
const UNTIE = `
import json, os, shutil, sys, torch
from safetensors.torch import load_file, save_file
src, a, b = sys.argv[1:4]
for out, noise in ((a, 0.0), (b, 0.02)):
    shutil.copytree(src, out)
    cfg = json.load(open(os.path.join(out, "config.json"))); cfg["tie_word_embeddings"] = False
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"))
    sd = load_file(os.path.join(src, "model.safetensors"))
    sd["lm_head.weight"] = sd["model.embed_tokens.weight"].clone()
    g = torch.Generator().manual_seed(0)
    sd = {k: v + noise * torch.randn(v.shape, generator=g, dtype=v.dtype) for k, v in sd.items()}
    save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
`;

const SEQ = Array.from({ length: 40 }, (_, i) => ((i * 37) % 250) + 5);

async function score(baseUrl: string): Promise<number[]> {
  const res = await fetch(`${baseUrl}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", prompt: SEQ, max_tokens: 1, temperature: 1, prompt_logprobs: 0 }),
    signal: AbortSignal.timeout(300_000),
  });
  expect(res.status).toBe(200);
  const scored = ((await res.json()) as { choices: { prompt_logprobs: (Record<string, { logprob: number }> | null)[] }[] }).choices[0]!.prompt_logprobs;
  return SEQ.slice(1).map((id, i) => scored[i + 1]![String(id)]!.logprob);
}

const gap = (x: number[], y: number[]) => Math.max(...x.map((v, i) => Math.abs(v - y[i]!)));

async function serveOn(modelPath: string, logFile: string) {
  return startVllmServer({ serve: { modelPath, maxModelLen: 2048, dtype: "bfloat16", args: [], startTimeoutSeconds: 900 }, model: "m", logFile });
}

describe.skipIf(SKIP)(`vLLM's in-place reload through the vllm engine, on a real server${NOTE}`, () => {
  it("a server started on A and reloaded with B scores as a server started on B", async () => {
    if (!existsSync(defaultServePython()))
      throw new Error(`${defaultServePython()} is missing: run scripts/install-python.sh (or set REINS_SKIP_SCALE_PYTHON=1)`);
    const dir = tempDir();
    await ensureInitialPolicy(join(dir, "policy"), { seed: 3, python: "/usr/bin/python3" });
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    execFileSync(defaultServePython(), ["-c", UNTIE, join(dir, "policy"), a, b], { stdio: "ignore" });
    let onA: number[];
    let reloaded: number[];
    let fresh: number[];
    const first = await serveOn(a, join(dir, "a.log"));
    try {
      const engine = await createEngine({ type: "vllm", baseUrl: first.baseUrl, model: "m" }, {} as never);
      onA = await score(first.baseUrl);
      await engine.reload!("b", b);
      reloaded = await score(first.baseUrl);
    } finally {
      await first.stop();
    }
    const second = await serveOn(b, join(dir, "b.log"));
    try {
      fresh = await score(second.baseUrl);
    } finally {
      await second.stop();
    }
    console.log(
      `vllm-reload-real: server starts ${first.startSeconds.toFixed(1)} s, ${second.startSeconds.toFixed(1)} s; max |Δlogprob| B reloaded vs B loaded ${gap(reloaded, fresh).toExponential(2)}, A vs B ${gap(onA, fresh).toExponential(2)}`,
    );
    expect(gap(reloaded, fresh)).toBeLessThan(1e-3);
    expect(gap(onA, fresh)).toBeGreaterThan(0.1);
  }, 1_200_000);
});
