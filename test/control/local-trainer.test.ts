/**
 * The Trainer's fields in `reins run`: python, checkpointDir and weightsFormat drive the local
 * worker; mode kubernetes on CPU runs the worker in the Job's pod (worker: cluster) or here
 * (worker: local); GPU and multi-node settings (device, gpus, nodes; image in mode local) and a weightsFormat
 * the run's engine cannot load (onnx in process; safetensors for a vllm or sglang server) are refused before anything runs, with a permanent code and a hint.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ResolvedTrainer } from "../../src/compiler/contract/plan.js";
import { resolveTrainer } from "../../src/compiler/resolve/defaults.js";
import { localTrainer } from "../../src/runtime/control/local-trainer.js";
import { LoopError } from "../../src/runtime/control/loop-error.js";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { editSpec, experiment, jsonl } from "./helpers.js";

function refusal(t: Partial<ResolvedTrainer>, engineType = "onnx"): LoopError {
  try {
    localTrainer({ ...resolveTrainer(undefined), ...t }, "/runs/r1", engineType);
  } catch (e) {
    expect(e).toBeInstanceOf(LoopError);
    return e as LoopError;
  }
  throw new Error(`accepted ${JSON.stringify(t)}`);
}

describe("the local trainer of reins run", () => {
  it("refuses every setting of the GPU trainer Job, naming it, with the plan's manifests as the way", () => {
    for (const [t, words] of [
      [{ mode: "kubernetes", worker: "cluster", device: "cuda", gpus: 1 }, "mode: kubernetes with worker: cluster, device: cuda, gpus: 1"],
      [{ device: "cuda" }, "device: cuda"],
      [{ device: "cuda", gpus: 8 }, "gpus: 8"],
      [{ device: "cuda", nodes: 2 }, "nodes: 2"],
      [{ image: "reins-trainer:latest" }, "image: reins-trainer:latest"],
    ] as [Partial<ResolvedTrainer>, string][]) {
      const e = refusal(t);
      expect(e.code).toBe("TrainerModeUnsupported");
      expect(e.message).toContain(words);
      expect(e.hint).toContain("reins plan --json");
    }
  });

  it("needs onnx among the weights formats, and places checkpoints in the run or under an absolute directory", () => {
    const e = refusal({ weightsFormat: ["safetensors"] });
    expect(e.code).toBe("WeightsFormatUnsupported");
    expect(e.hint).toContain("onnx");
    expect(localTrainer(resolveTrainer({ python: "/opt/py/bin/python3" }), "/runs/r1", "onnx")).toEqual({
      python: "/opt/py/bin/python3",
      checkpointRoot: "/runs/r1/checkpoints",
      weightsFormat: ["onnx", "safetensors"],
      inCluster: false,
    });
    // mode: kubernetes on CPU: the worker in the Job's pod (worker: cluster, the default), or here (worker: local).
    expect(localTrainer(resolveTrainer({ mode: "kubernetes" }), "/runs/r1", "onnx").inCluster).toBe(true);
    expect(localTrainer(resolveTrainer({ mode: "kubernetes", worker: "local" }), "/runs/r1", "onnx").inCluster).toBe(false);
    expect(localTrainer(resolveTrainer({ checkpointDir: "/data/ckpts", weightsFormat: ["onnx"] }), "/runs/r1", "onnx")).toMatchObject({
      checkpointRoot: "/data/ckpts/r1",
      weightsFormat: ["onnx"],
    });
  });

  it("through a vllm or sglang server, needs safetensors (what the server reloads), not onnx", () => {
    for (const type of ["vllm", "sglang"]) {
      const e = refusal({ weightsFormat: ["onnx"] }, type);
      expect(e.code).toBe("WeightsFormatUnsupported");
      expect(e.message).toContain(`the ${type} server reloads each new version from safetensors`);
      expect(e.hint).toContain("Add safetensors");
      expect(localTrainer(resolveTrainer({ weightsFormat: ["safetensors"] }), "/runs/r1", type).weightsFormat).toEqual(["safetensors"]);
    }
  });

  it("reins run stops at the start with error[TrainerModeUnsupported]: no policy, no worker, no rollout", () => {
    const dir = tempDir("reins-run-trainer-");
    const file = experiment(dir);
    editSpec(file, [[/ {2}trainer: \{name: torch-cpu\}\n/, "  trainer: {name: torch-gpu}\n"]]);
    const out = join(dir, "run");
    const r = reins(["run", file, "--out", out], { timeout: 120_000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[TrainerModeUnsupported]");
    expect(r.stderr).toContain("mode: kubernetes with worker: cluster, device: cuda, gpus: 8;");
    expect(r.stderr).toContain("reins plan --json");
    expect(existsSync(join(dir, "spec", "policy"))).toBe(false);
    expect(existsSync(join(out, "trainer.log"))).toBe(false);
    expect(jsonl(out, "rollouts.jsonl")).toEqual([]);
  });
});
