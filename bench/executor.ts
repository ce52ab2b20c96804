/**
 * Executor throughput: N rollouts of a command harness through the whole executor (sandbox,
 * workspace, harness, verifier, store) against launching the same command directly (bash on the
 * host, same concurrency), and the scheduler's share of a rollout's wall time (time not spent in
 * sandbox creation, workspace, harness, verification or destruction).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compilePlan } from "../src/compiler/index.js";
import { createExecutor } from "../src/runtime/executor/executor.js";
import { LocalSandboxProvider } from "../src/runtime/sandbox/local/provider.js";
import { RunStore } from "../src/runtime/store/run-store.js";
import { writeFileSync } from "node:fs";

const N = Number(process.env.BENCH_ROLLOUTS ?? 48);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const COMMAND = "printf hi > hello.txt";

const dir = mkdtempSync(join(tmpdir(), "reins-bench-exec-"));
const tasks = Array.from(
  { length: N },
  (_, i) => `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: b${i}, labels: {suite: b}}
spec:
  instruction: Create hello.txt containing hi
  verifier: {checks: [{fileEquals: {path: hello.txt, content: hi}}]}
`,
).join("---\n");
writeFileSync(
  join(dir, "specs.yaml"),
  `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: bench}
spec:
  tasks: [{labels: {suite: b}}]
  harnesses: [{name: h}]
  sandbox: {provider: local, concurrency: ${CONCURRENCY}, retries: 0}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: h}
spec: {command: ["bash", "-c", "${COMMAND}"]}
---
${tasks}`,
);

async function direct(): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < N) {
      const i = next++;
      const ws = mkdtempSync(join(dir, `direct-${i}-`));
      await new Promise<void>((resolve) => spawn("bash", ["-c", COMMAND], { cwd: ws, stdio: "ignore" }).on("exit", () => resolve()));
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return (performance.now() - t0) / 1000;
}

async function viaExecutor(): Promise<{ seconds: number; schedulerShare: number; phases: Record<string, number> }> {
  const plan = compilePlan([join(dir, "specs.yaml")], { env: {} }).value!;
  const store = RunStore.open(join(dir, `run-${Date.now()}`), plan, { resume: false }).store!;
  const provider = new LocalSandboxProvider();
  const executor = await createExecutor({ plan, store, provider });
  const t0 = performance.now();
  const results = await executor.runRollouts(plan.steps[0]!.rollouts, 0);
  const seconds = (performance.now() - t0) / 1000;
  await executor.close();
  await provider.close();
  store.close();
  const phases: Record<string, number> = {};
  let wall = 0;
  let accounted = 0;
  for (const r of results) {
    wall += r.durationMs;
    for (const [k, v] of Object.entries(r.phases)) {
      phases[k] = (phases[k] ?? 0) + v;
      accounted += v;
    }
  }
  for (const k of Object.keys(phases)) phases[k] = phases[k]! / results.length;
  return { seconds, schedulerShare: (wall - accounted) / wall, phases };
}

let d: number;
let e: Awaited<ReturnType<typeof viaExecutor>>;
try {
  d = await direct();
  e = await viaExecutor();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`rollouts ${N}, concurrency ${CONCURRENCY}, harness: bash -c '${COMMAND}'`);
console.log(`direct launches     ${(N / d).toFixed(1)} /s   (${d.toFixed(2)} s)`);
console.log(`through executor    ${(N / e.seconds).toFixed(1)} rollouts/s   (${e.seconds.toFixed(2)} s)`);
console.log(`executor / direct   ${(d / e.seconds).toFixed(3)} of the direct rate`);
console.log(
  `per-rollout phases (ms, mean): ${Object.entries(e.phases)
    .map(([k, v]) => `${k} ${v.toFixed(0)}`)
    .join(", ")}`,
);
console.log(`scheduler share of rollout wall time: ${(e.schedulerShare * 100).toFixed(2)}%`);
