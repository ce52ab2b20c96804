/** The policy directory: created by the trainer package's init_model when it has none; trained or not. */
import { execFile } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { readModelFile } from "../../compiler/index.js";
import { ReinsError } from "../../compiler/contract/problem.js";
import { trainerRoot } from "../training/trainer-process.js";

const run = promisify(execFile);

/** A model path (directory or model.onnx) → its directory. */
export function policyDirOf(modelPath: string): string {
  return existsSync(modelPath) && statSync(modelPath).isDirectory() ? modelPath : modelPath.endsWith(".onnx") ? dirname(modelPath) : modelPath;
}

export function hasPolicy(dir: string): boolean {
  return existsSync(join(dir, "READY"));
}

/**
 * Optimizer steps behind the weights in `dir`: its trained.json, which the trainer worker writes
 * next to every weights version it saves after at least one optimizer step (counting the steps of
 * the weights it started from). 0 for a fresh policy, or for weights reins did not train.
 */
export function trainedSteps(dir: string): number {
  // Read as a Model's file (a regular file outside /proc, /sys and /dev, capped): the directory is the spec's.
  const read = readModelFile(join(dir, "trained.json"), dir, "config");
  if (!read.ok) return 0;
  try {
    const n = (JSON.parse(read.text) as { optimizerSteps?: unknown }).optimizerSteps;
    return typeof n === "number" && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
  } catch {
    return 0;
  }
}

/** Creates the policy (tokenizer with BPE merges learned from `corpus` when given) unless it exists. */
export async function ensureInitialPolicy(
  dir: string,
  opts: { seed: number; python: string; corpus?: string; merges?: number },
): Promise<{ version: string; created: boolean }> {
  const ready = readModelFile(join(dir, "READY"), dir, "config");
  if (ready.ok) return { version: ready.text.trim(), created: false };
  // A READY that is there but not a regular file (a link to /proc/self/environ, a FIFO) is never read into a version.
  if (ready.code !== "FileNotFound") throw new ReinsError(ready.code, `The policy's ${join(dir, "READY")} is not read: ${ready.why}.`);
  const args = ["-m", "trainers.torch.init_model", "--out", dir, "--seed", String(opts.seed)];
  if (opts.corpus && opts.merges) args.push("--corpus", opts.corpus, "--merges", String(opts.merges));
  const { stdout } = await run(opts.python, args, {
    cwd: trainerRoot(),
    env: { ...process.env, PYTHONPATH: trainerRoot(), PYTHONDONTWRITEBYTECODE: "1" },
    maxBuffer: 16 * 1024 * 1024,
  });
  const info = JSON.parse(stdout) as { version: string };
  return { version: info.version, created: true };
}
