/**
 * The sandbox gates of one candidate (or of the kept families, re-verified): an Evaluation over its
 * tasks is written beside it and compiled, then every task's reference solution is replayed
 * through the validation harness k times, a do-nothing harness is run once, and each mutated
 * reference once — all through the real executor, in fresh sandboxes, with the reference engine.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { compilePlan, type Diagnostic, type Plan, type PlanRollout, type ResolvedModel, type ResolvedTask, type ScriptedTurn } from "../../compiler/index.js";
import type { Engine } from "../engines/engine.js";
import { ReferenceEngine } from "../control/reference-engine.js";
import { referenceTurnsFor } from "../control/reference-tools.js";
import { createExecutor } from "../executor/executor.js";
import { createProvider } from "../executor/providers.js";
import { loadModelRuntime } from "../model/model-runtime.js";
import type { RolloutResult } from "../records/index.js";
import { RunStore } from "../store/run-store.js";
import { mutationsOf, type Mutation } from "./mutations.js";

export const NOP_HARNESS = "reins-do-nothing";

export interface ReplayOptions {
  /** The directory holding the families' YAML files (imports); the Evaluation and run go here too. */
  dir: string;
  families: string[];
  harness: string;
  attempts: number;
  sandbox: Record<string, unknown>;
  /** Also run the do-nothing agent (and, with `mutations`, the mutated references). */
  adversaries: boolean;
  mutations?: boolean;
  /** The difficulty gate's harness, when it is another one. */
  baselineHarness?: string;
  signal?: AbortSignal;
}

export interface TaskReplays {
  task: ResolvedTask;
  references: RolloutResult[];
  nop?: RolloutResult;
  mutations: { mutation: Mutation; result: RolloutResult }[];
}

/** The Evaluation that selects the families' tasks, with the validation and do-nothing harnesses. */
export function gateEvaluation(o: Pick<ReplayOptions, "families" | "harness" | "sandbox" | "baselineHarness">, files: string[]): string {
  const evaluation = {
    apiVersion: "reins/v1alpha1",
    kind: "Evaluation",
    metadata: { name: "synth-gates" },
    spec: {
      imports: files,
      model: { name: "qwen3" },
      tasks: o.families.map((f) => ({ labels: { "reins.dev/family": f } })),
      harnesses: [...new Set([o.harness, NOP_HARNESS, ...(o.baselineHarness ? [o.baselineHarness] : [])])].map((name) => ({ name })),
      attempts: 1,
      sandbox: o.sandbox,
    },
  };
  // The do-nothing agent exits at once. It declares a dialect and an `mcp` section (both unused) so
  // that a family whose tasks have MCP servers can be paired with it: a harness without them is
  // refused such tasks (McpUnsupportedByHarness), which would drop every MCP family at the schema gate.
  const nop = {
    apiVersion: "reins/v1alpha1",
    kind: "Harness",
    metadata: { name: NOP_HARNESS },
    spec: { dialect: "openai-chat", command: ["sh", "-c", "exit 0"], mcp: {} },
  };
  return `${stringify(evaluation)}---\n${stringify(nop)}`;
}

export function compileGates(o: ReplayOptions, files: string[]): { plan?: Plan; diagnostics: Diagnostic[] } {
  const file = join(o.dir, "synth-gates.yaml");
  writeFileSync(file, gateEvaluation(o, files));
  const r = compilePlan([file], { projectRoot: o.dir });
  return { ...(r.value ? { plan: r.value } : {}), diagnostics: r.diagnostics };
}

export async function runReplays(plan: Plan, o: ReplayOptions): Promise<TaskReplays[]> {
  const harness = plan.harnesses.find((h) => h.name === o.harness)!;
  const rollouts: PlanRollout[] = [];
  const scripts = new Map<string, ScriptedTurn[]>();
  const add = (id: string, task: ResolvedTask, h: string, turns?: ScriptedTurn[]) => {
    rollouts.push({ id, pair: `${task.name}@${h}`, task: task.name, harness: h, attempt: 0 });
    if (turns) scripts.set(id, turns);
  };
  const plans = plan.tasks.map((task, i) => {
    const servers = (task.mcpServers ?? []).map((s) => s.name);
    const reference = task.reference && task.reference.length > 0 ? task.reference : undefined;
    const mutations = o.adversaries && o.mutations !== false && reference ? mutationsOf(reference) : [];
    if (reference) for (let a = 0; a < o.attempts; a++) add(`ref-${i}-${a}`, task, o.harness, referenceTurnsFor(reference, harness, servers));
    if (o.adversaries) add(`nop-${i}`, task, NOP_HARNESS);
    mutations.forEach((m, j) => add(`mut-${i}-${j}`, task, o.harness, referenceTurnsFor(m.turns, harness, servers)));
    return { task, i, mutations };
  });
  const model = plan.model!;
  const engine = new ReferenceEngine({ model, runtime: await loadModelRuntime(model) }, (id) =>
    scripts.has(id) ? { key: id, turns: scripts.get(id)! } : undefined,
  );
  const results = await runGateRollouts(plan, rollouts, join(o.dir, "run"), { engine, model, ...(o.signal ? { signal: o.signal } : {}) });
  const byId = new Map(results.map((r) => [r.id, r]));
  return plans.map(({ task, i, mutations }) => ({
    task,
    references: Array.from({ length: task.reference?.length ? o.attempts : 0 }, (_, a) => byId.get(`ref-${i}-${a}`)!).filter(Boolean),
    ...(byId.has(`nop-${i}`) ? { nop: byId.get(`nop-${i}`)! } : {}),
    mutations: mutations.map((mutation, j) => ({ mutation, result: byId.get(`mut-${i}-${j}`)! })).filter((m) => m.result),
  }));
}

/** Rollouts of a gate, once, in fresh sandboxes of the plan's provider, into a run directory of their own. */
export async function runGateRollouts(
  plan: Plan,
  rollouts: PlanRollout[],
  runDir: string,
  o: { engine?: Engine; model?: ResolvedModel; signal?: AbortSignal } = {},
): Promise<RolloutResult[]> {
  const store = RunStore.open(runDir, plan, { resume: false }).store!;
  const provider = await createProvider(plan.sandbox);
  try {
    const exec = await createExecutor({ plan, store, provider, ...o });
    try {
      return await exec.runRollouts(rollouts, 0);
    } finally {
      await exec.close();
    }
  } finally {
    await provider.close();
    store.close();
  }
}
