/**
 * The gates judged from a candidate's replays: its reference passes k times out of k, the
 * do-nothing agent fails, and every mutated reference fails. Each says why, in a sentence. Pure.
 */
import type { RolloutResult } from "../records/index.js";
import type { TaskReplays } from "./replays.js";

export type GateName = "generator" | "schema" | "leak" | "near-duplicate" | "reference" | "do-nothing" | "mutation" | "difficulty";
export const GATE_NAMES: readonly GateName[] = ["generator", "schema", "leak", "near-duplicate", "reference", "do-nothing", "mutation", "difficulty"];

export interface GateResult {
  gate: GateName;
  passed: boolean;
  reason: string;
}

/** How a rollout ended, in a few words: its reward and the first check that failed, or its error. */
export function outcomeOf(r: RolloutResult): string {
  if (r.status !== "ok") return `${r.status}${r.error ? `: ${r.error.code} (${r.error.message.slice(0, 160)})` : ""}`;
  const checks = (r.verifier as { parts?: { checks?: { results?: { pass: boolean; name: string; reason: string }[] } } } | null)?.parts?.checks?.results ?? [];
  const failed = checks.find((c) => !c.pass);
  return `reward ${r.reward}${failed ? ` (${failed.name}: ${failed.reason.slice(0, 160)})` : ""}`;
}

export function referenceGate(replays: readonly TaskReplays[], attempts: number): GateResult {
  for (const { task, references } of replays) {
    if (references.length === 0) return { gate: "reference", passed: false, reason: `task ${task.name} has no reference solution` };
    const passed = references.filter((r) => r.status === "ok" && r.passed).length;
    if (passed < attempts) {
      const failed = references.find((r) => !(r.status === "ok" && r.passed))!;
      return { gate: "reference", passed: false, reason: `task ${task.name}'s reference passed ${passed}/${attempts}: ${outcomeOf(failed)}` };
    }
  }
  return { gate: "reference", passed: true, reason: `every task's reference passed ${attempts}/${attempts}` };
}

export function doNothingGate(replays: readonly TaskReplays[]): GateResult {
  for (const { task, nop } of replays) {
    if (!nop) continue;
    if (nop.status !== "ok")
      return { gate: "do-nothing", passed: false, reason: `task ${task.name} could not be checked with the do-nothing agent: ${outcomeOf(nop)}` };
    if (nop.passed) return { gate: "do-nothing", passed: false, reason: `task ${task.name} passes when the agent does nothing (${outcomeOf(nop)})` };
  }
  return { gate: "do-nothing", passed: true, reason: "the do-nothing agent fails every task" };
}

export function mutationGate(replays: readonly TaskReplays[]): GateResult {
  let n = 0;
  for (const { task, mutations } of replays) {
    for (const { mutation, result } of mutations) {
      n++;
      if (result.status !== "ok")
        return { gate: "mutation", passed: false, reason: `task ${task.name} could not be checked with ${mutation.what}: ${outcomeOf(result)}` };
      if (result.passed)
        return { gate: "mutation", passed: false, reason: `task ${task.name}'s verifier still passes with ${mutation.what} (${outcomeOf(result)})` };
    }
  }
  return { gate: "mutation", passed: true, reason: `all ${n} mutated references fail` };
}
