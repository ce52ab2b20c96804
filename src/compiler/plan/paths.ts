/**
 * The plan as its hash and `diff` see it: host paths (model files, harness mounts) relative to
 * Plan.root, with POSIX separators. The plan itself carries them absolute, ready for the runtime;
 * this view keeps the hash the same on every machine and in every checkout. Pure.
 */
import { isAbsolute, relative, sep } from "node:path";
import type { Plan, ResolvedHarness, ResolvedModel } from "../contract/plan.js";

export function portablePath(path: string, root: string): string {
  if (!isAbsolute(path)) return path;
  return relative(root, path).split(sep).join("/") || ".";
}

export function portableModel(model: ResolvedModel, root: string): ResolvedModel {
  const out: ResolvedModel = { ...model };
  if (out.tokenizer?.type === "file" || out.tokenizer?.type === "huggingface")
    out.tokenizer = { ...out.tokenizer, path: portablePath(out.tokenizer.path, root) };
  if (out.engine.type === "onnx") out.engine = { ...out.engine, modelPath: portablePath(out.engine.modelPath, root) };
  if (out.engine.type === "vllm" && out.engine.serve)
    out.engine = { ...out.engine, serve: { ...out.engine.serve, modelPath: portablePath(out.engine.serve.modelPath, root) } };
  return out;
}

export function portableHarness(harness: ResolvedHarness, root: string): ResolvedHarness {
  if (harness.mounts.length === 0) return harness;
  return { ...harness, mounts: harness.mounts.map((m) => ({ ...m, hostPath: portablePath(m.hostPath, root) })) };
}

export function portablePlan(plan: Plan): Plan {
  if (!plan.root) return plan;
  const out: Plan = { ...plan, harnesses: plan.harnesses.map((h) => portableHarness(h, plan.root)) };
  if (plan.model) out.model = portableModel(plan.model, plan.root);
  return out;
}
