/**
 * The plan's Trainer as `reins run` uses it on this machine: the torch worker as a local CPU
 * process. Every field either drives the run or is refused, before anything is sampled:
 *   python         the interpreter that runs the worker (and init_model);
 *   checkpointDir  where checkpoints go: a relative path under the run directory, an absolute
 *                  one as `<checkpointDir>/<run directory's name>/` (runs never share one);
 *   weightsFormat  what save_weights writes for each published version; must include the format
 *                  the run's engine loads: onnx for the in-process onnx engine (model.onnx),
 *                  safetensors for a vllm or sglang server (it reloads the directory's shards);
 *   mode: kubernetes with worker: cluster (the default): the worker runs under torchrun in the
 *                  Job's pod (image: the Job's) and reins drives rank 0 over the trainer protocol
 *                  (k8s/cluster-worker.ts);
 *   mode: kubernetes with worker: local: the Job is created on the cluster, the worker runs here;
 *   device: cuda, gpus > 0, nodes > 1 (any mode), image (mode local): not driven by reins run
 *                  (GPU training is the plan's Job, run by hand) → TrainerModeUnsupported.
 */
import { basename, isAbsolute, join, resolve } from "node:path";
import type { ResolvedTrainer } from "../../compiler/contract/plan.js";
import { LoopError } from "./loop-error.js";

export interface LocalTrainer {
  python: string;
  /** Absolute directory of this run's checkpoints. */
  checkpointRoot: string;
  weightsFormat: ("onnx" | "safetensors")[];
  /** The worker runs in the trainer Job's pods (mode: kubernetes, worker: cluster), not here. */
  inCluster: boolean;
}

/** The local trainer of a run in `runDir`, or a LoopError naming every setting it cannot honour. */
export function localTrainer(trainer: ResolvedTrainer | undefined, runDir: string, engineType: string): LocalTrainer {
  if (!trainer) throw new Error("an Experiment's plan always carries its trainer (the compiler's defaults when the spec has none)");
  const t = trainer;
  const unsupported: string[] = [];
  // worker: cluster (the default of mode kubernetes): torchrun in the Job's pod; worker: local: the Job on the cluster, the worker here.
  const inCluster = t.mode === "kubernetes" && t.worker !== "local";
  if (t.device !== "cpu") unsupported.push(`device: ${t.device}`);
  if (t.gpus > 0) unsupported.push(`gpus: ${t.gpus}`);
  if (t.nodes > 1) unsupported.push(`nodes: ${t.nodes}`);
  if (t.image !== undefined && t.mode === "local") unsupported.push(`image: ${t.image}`);
  if (unsupported.length > 0) {
    if (t.mode === "kubernetes") unsupported.unshift(`mode: kubernetes with worker: ${t.worker ?? "cluster"}`);
    throw new LoopError(
      "TrainerModeUnsupported",
      `The Trainer asks for ${unsupported.join(", ")}; reins run drives one trainer worker process on CPU: on this machine (mode: local, or mode: kubernetes with worker: local) or in the trainer Job's one pod (mode: kubernetes, worker: cluster). GPU and multi-node training have not been driven by reins run.`,
      "The Kubernetes Job for GPU training is in the plan's manifests: `reins plan --json`. To train with reins run, use device: cpu and no gpus or nodes: mode: kubernetes (worker: cluster runs the worker in the Job's pod), or mode: local (e.g. {name: torch-cpu}).",
    );
  }
  if (engineType === "onnx" && !t.weightsFormat.includes("onnx")) {
    throw new LoopError(
      "WeightsFormatUnsupported",
      `The Trainer's weightsFormat is [${t.weightsFormat.join(", ")}], but the in-process onnx engine of reins run reloads each new version from model.onnx.`,
      "Add onnx to the Trainer's weightsFormat (e.g. [onnx, safetensors]); safetensors alone is for vllm and sglang engines.",
    );
  }
  if (engineType !== "onnx" && !t.weightsFormat.includes("safetensors")) {
    throw new LoopError(
      "WeightsFormatUnsupported",
      `The Trainer's weightsFormat is [${t.weightsFormat.join(", ")}], but the ${engineType} server reloads each new version from safetensors files.`,
      "Add safetensors to the Trainer's weightsFormat (e.g. [safetensors]); onnx is what the in-process onnx engine loads.",
    );
  }
  const dir = t.checkpointDir;
  const checkpointRoot = isAbsolute(dir) ? join(dir, basename(resolve(runDir))) : resolve(runDir, dir);
  return { python: t.python, checkpointRoot, weightsFormat: [...new Set(t.weightsFormat)], inCluster };
}
