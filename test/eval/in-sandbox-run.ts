/**
 * Test helper: `reins eval` of one real harness inside a sandbox, the way the runtime runs it —
 * the plan compiled from an Evaluation, the provider made from its sandbox spec, the executor
 * installing the harness, serving the proxy and verifying each rollout — with the provider
 * observed (observed-sandboxes.ts). The model is the harness's scripted policy from
 * examples/proxy/<harness>.yaml: asked "Create a file hello.txt containing hi", it writes the file
 * with the harness's own tool.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import os from "node:os";
import { join } from "node:path";
import { compilePlan, type Plan } from "../../src/compiler/index.js";
import { createExecutor } from "../../src/runtime/executor/executor.js";
import { createSandboxProvider, providerOptionsFor } from "../../src/runtime/sandbox/registry.js";
import type { CallRecord, RolloutResult } from "../../src/runtime/records/index.js";
import { RunStore } from "../../src/runtime/store/run-store.js";
import { REPO_ROOT } from "../harness/harness-spec.js";
import { INSTRUCTION } from "../harness/scenario.js";
import { tempDir } from "../temp.js";
import { ObservingProvider, type HarnessLaunch } from "./observed-sandboxes.js";

export interface InSandboxOptions {
  harness: string;
  sandbox: string;
  attempts: number;
}

export interface InSandboxRun {
  plan: Plan;
  runDir: string;
  results: RolloutResult[];
  calls: CallRecord[];
  launches: HarnessLaunch[];
  /** The host server every probe tried to reach (must stay untouched). */
  hostConnections: number;
  /** Wall time of the whole evaluation (install check, proxy, every rollout). */
  wallMs: number;
}

export function evaluationYaml(o: InSandboxOptions): string {
  const example = readFileSync(join(REPO_ROOT, "examples", "proxy", `${o.harness}.yaml`), "utf8");
  const model = /metadata:\s*\n\s*name:\s*(\S+)/.exec(example)![1];
  return `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: in-sandbox}
spec:
  model: {name: ${model}}
  tasks: [{labels: {suite: hello}}]
  harnesses: [{name: ${o.harness}}]
  attempts: ${o.attempts}
  sandbox: ${o.sandbox}
---
${example}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: hello, labels: {suite: hello}}
spec:
  instruction: ${INSTRUCTION}
  verifier: {checks: [{fileEquals: {path: hello.txt, content: "hi"}}]}
  timeoutSeconds: 600
`;
}

function hostAddress(): string | undefined {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return undefined;
}

export async function runInSandbox(o: InSandboxOptions): Promise<InSandboxRun> {
  const dir = tempDir("reins-in-sandbox-");
  const file = join(dir, "eval.yaml");
  writeFileSync(file, evaluationYaml(o));
  const compiled = compilePlan([file], { env: {} });
  if (!compiled.value) throw new Error(JSON.stringify(compiled.diagnostics, null, 2));
  const plan = compiled.value;
  const runDir = join(dir, "run");
  const store = RunStore.open(runDir, plan, { resume: false }).store!;
  // A server on every host address: nothing inside a sandbox may reach it.
  let hostConnections = 0;
  const server: Server = createServer((s) => {
    hostConnections++;
    s.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
  const port = (server.address() as { port: number }).port;
  // The plan's provider with the plan's settings, as `reins eval` makes it (the run directory
  // hidden); podman keeps its state under this test's directory instead of the shared one.
  const options = providerOptionsFor(plan.sandbox, { local: { hidePaths: [store.dir] }, podman: { rootDir: join(dir, "podman") } });
  const provider = new ObservingProvider(await createSandboxProvider(plan.sandbox.provider, options));
  const started = Date.now();
  try {
    const executor = await createExecutor({ plan, store, provider, backoffMs: 50 });
    const host = hostAddress();
    provider.targets = [`127.0.0.1:${port}`, ...(host ? [`${host}:${port}`] : []), `127.0.0.1:${executor.proxy!.port}`, "1.1.1.1:443"];
    let results: RolloutResult[];
    try {
      results = await executor.runRollouts(
        plan.steps.flatMap((s) => s.rollouts),
        0,
      );
    } finally {
      await executor.close();
    }
    return { plan, runDir, results, calls: store.calls(), launches: provider.launches, hostConnections, wallMs: Date.now() - started };
  } finally {
    await provider.close();
    store.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** A one-line account of a run for assertion messages. */
export function describeInSandbox(run: InSandboxRun): string {
  return JSON.stringify(
    {
      results: run.results.map((r) => ({ id: r.id, status: r.status, reward: r.reward, tries: r.tries, error: r.error, exit: r.harnessExit })),
      launches: run.launches.map((l) => ({
        tryId: l.tryId,
        probeError: l.probeError,
        exit: l.exit && { code: l.exit.exitCode, stderr: l.exit.stderr.slice(-400) },
      })),
    },
    null,
    1,
  );
}
