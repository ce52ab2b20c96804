/** Test helpers: write specs into a temp dir, compile, run rollouts through the real executor. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { compilePlan, type Plan } from "../../src/compiler/index.js";
import { createExecutor, type ExecutorOptions } from "../../src/runtime/executor/executor.js";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import type { SandboxProvider } from "../../src/runtime/sandbox/provider.js";
import { RunStore } from "../../src/runtime/store/run-store.js";
import { tempDir as makeTempDir } from "../temp.js";

/** A temporary directory, removed after the test file (test/temp.ts). */
export function tempDir(prefix = "reins-exec-"): string {
  return makeTempDir(prefix);
}

export function writeSpecs(dir: string, yaml: string, name = "specs.yaml"): string {
  const file = join(dir, name);
  writeFileSync(file, yaml);
  return file;
}

export function planOf(file: string): Plan {
  const r = compilePlan([file], { env: {} });
  if (!r.value) throw new Error(JSON.stringify(r.diagnostics, null, 2));
  return r.value;
}

/** An Evaluation of `tasks` (YAML task docs) with one command harness. */
export function evaluationYaml(opts: {
  command: string[];
  tasks: string;
  attempts?: number;
  concurrency?: number;
  retries?: number;
  timeoutSeconds?: number;
}): string {
  return `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: t}
spec:
  tasks: [{labels: {suite: t}}]
  harnesses: [{name: h}]
  attempts: ${opts.attempts ?? 1}
  sandbox: {provider: local, concurrency: ${opts.concurrency ?? 4}, retries: ${opts.retries ?? 1}}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: h}
spec:
  command: ${JSON.stringify(opts.command)}
---
${opts.tasks}`;
}

export function taskYaml(name: string, opts: { timeoutSeconds?: number; content?: string } = {}): string {
  return `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: ${name}, labels: {suite: t}}
spec:
  instruction: Create hello.txt containing hi
  verifier: {checks: [{fileEquals: {path: hello.txt, content: "${opts.content ?? "hi"}"}}]}
  timeoutSeconds: ${opts.timeoutSeconds ?? 60}
`;
}

export async function runPlan(plan: Plan, opts: Partial<ExecutorOptions> & { provider?: SandboxProvider } = {}) {
  const dir = tempDir("reins-run-");
  const store = RunStore.open(join(dir, "run"), plan, { resume: false }).store!;
  const provider = opts.provider ?? new LocalSandboxProvider();
  const executor = await createExecutor({ plan, store, provider, backoffMs: 50, ...opts });
  try {
    const rollouts = plan.steps.flatMap((s) => s.rollouts);
    const results = await executor.runRollouts(rollouts, 0);
    return { results, store };
  } finally {
    await executor.close();
    if (!opts.provider) await provider.close();
    store.close();
  }
}
