/**
 * The kubernetes provider's client code (@kubernetes/client-node 2.0.1) against an in-process mock
 * API server: REST replayed from hand-written exchanges (fixtures/), exec over a real websocket
 * (v5.channel.k8s.io) whose commands run for real in local sandboxes. The agent-sandbox claim path
 * runs against the test cluster's real API server instead (warm-pool.test.ts).
 */
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { KubernetesSandboxProvider } from "../../src/runtime/sandbox/kubernetes/provider.js";
import type { KubernetesSandbox } from "../../src/runtime/sandbox/kubernetes/sandbox.js";
import { baseEnvironment, SANDBOX_HOME } from "../../src/runtime/sandbox/layout.js";
import { buildSandboxPod } from "../../src/runtime/sandbox/kubernetes/manifests.js";
import { ownerReference } from "../../src/runtime/sandbox/kubernetes/objects.js";
import { validateManifest } from "../../src/runtime/k8s/validate.js";
import { runRollout } from "../../src/runtime/executor/rollout.js";
import type { VerifierResult } from "../../src/runtime/verifiers/verify.js";
import { MockApiServer, type Exchange } from "./mock-api-server.js";
import { LocalPodBackend } from "./local-pod-backend.js";
import { tempDir } from "../sandbox/helpers.js";
import { evaluationYaml, planOf, writeSpecs } from "../executor/helpers.js";

const NS = "reins-test";
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function fixture(name: string): Exchange[] {
  return (JSON.parse(readFileSync(path.join(import.meta.dirname, "fixtures", `${name}.json`), "utf8")) as { exchanges: Exchange[] }).exchanges;
}

async function setup(name: string, options: Partial<ConstructorParameters<typeof KubernetesSandboxProvider>[0]> = {}) {
  const root = tempDir("reins-k8s-");
  const backend = new LocalPodBackend(path.join(root, "pods"));
  const mock = await MockApiServer.start(fixture(name), backend);
  const provider = new KubernetesSandboxProvider({
    connection: { server: mock.url, skipTLSVerify: true },
    namespace: NS,
    pollIntervalMs: 10,
    readyTimeoutMs: 5000,
    ...options,
  });
  cleanups.push(async () => {
    await provider.close();
    await backend.close();
    await mock.close();
    rmSync(root, { recursive: true, force: true });
  });
  return { mock, provider, backend };
}

const posted = (mock: MockApiServer, suffix: string) =>
  mock.received.filter((r) => r.method === "POST" && r.path.endsWith(suffix)).map((r) => r.body as Record<string, unknown>);

describe("kubernetes provider against recorded API exchanges", () => {
  it("creates the run owner and a valid Pod, waits for Ready, execs, copies files, deletes", async () => {
    const { mock, provider } = await setup("pod-lifecycle");
    const box = (await provider.create({
      id: "r-0",
      runId: "run-k8s",
      task: "hello",
      harness: "shell",
      network: "none",
      timeoutSeconds: 900,
      env: { GREETING: "hi" },
    })) as KubernetesSandbox;
    expect(box.podName).toBe("reins-run-k8s-r-0-3b13ed");

    const [owner] = posted(mock, "/configmaps");
    const [pod] = posted(mock, "/pods");
    expect(validateManifest(owner)).toEqual([]);
    expect(validateManifest(pod)).toEqual([]);
    const expected = buildSandboxPod({
      identity: { runId: "run-k8s", rolloutId: "r-0", task: "hello", harness: "shell" },
      namespace: NS,
      image: "localhost/reins-sandbox:1",
      deadlineSeconds: 900,
      owner: { name: "reins-run-run-k8s-cfb860", uid: "6f1c1f0e-0d0b-4c3e-9c55-2b1f5a0e7a11" },
      env: { ...baseEnvironment(SANDBOX_HOME), GREETING: "hi" },
    });
    expect(pod).toEqual(expected);
    expect((pod.metadata as { ownerReferences: unknown[] }).ownerReferences).toEqual([
      ownerReference({ name: "reins-run-run-k8s-cfb860", uid: "6f1c1f0e-0d0b-4c3e-9c55-2b1f5a0e7a11" }),
    ]);
    // Pending, Pending (not ready), Running/Ready: three polls.
    expect(mock.received.filter((r) => r.method === "GET").length).toBe(3);

    const r = await box.exec(["sh", "-c", 'pwd; echo "$GREETING"; echo err >&2; exit 3']);
    expect(r).toMatchObject({ exitCode: 3, stdout: "/workspace\nhi\n", stderr: "err\n", signal: null, timedOut: false });
    expect((await box.exec(["true"])).exitCode).toBe(0);
    expect((await box.exec(["cat"], { stdin: "over the websocket" })).stdout).toBe("over the websocket");

    const binary = new Uint8Array(100_000).map((_, i) => (i * 13) % 256);
    await box.writeFiles([
      { path: "in/data.bin", content: binary },
      { path: "/home/sandbox/.tool/cfg.json", content: '{"a":1}' },
    ]);
    expect(await box.listFiles()).toEqual(["in/data.bin"]);
    expect(await box.listFiles("/home/sandbox")).toEqual([".tool/cfg.json"]);
    expect(Buffer.compare(await box.readFile("in/data.bin"), Buffer.from(binary))).toBe(0);

    const execs = mock.execs;
    expect(
      execs.every((e) => e.protocol === "v5.channel.k8s.io" && e.container === "sandbox" && e.pod === "reins-run-k8s-r-0-3b13ed" && e.namespace === NS),
    ).toBe(true);
    expect(execs[0].command.slice(0, 2)).toEqual(["env", "-i"]);

    expect(await box.alive()).toBe(true);
    await box.destroy();
    await provider.cleanupRun("run-k8s");
    expect(mock.unexpected).toEqual([]);
    expect(mock.pending()).toEqual([]);
  });

  it("kills a timed-out command inside the pod", async () => {
    const { mock, provider } = await setup("pod-lifecycle");
    const box = await provider.create({ id: "r-0", runId: "run-k8s", task: "hello", harness: "shell", network: "none" });
    const r = await box.exec(["sh", "-c", "sleep 30; echo never"], { timeoutMs: 300 });
    expect(r).toMatchObject({ timedOut: true, exitCode: null, signal: "SIGKILL" });
    expect(r.stdout).toBe("");
    expect(mock.execs.some((e) => e.command.join(" ").includes("kill -9 -1"))).toBe(true);
    await box.destroy();
  });

  it("reads an existing run owner back, and turns creation failures into typed errors", async () => {
    const { mock, provider } = await setup("pod-failures", { readyTimeoutMs: 300 });
    await expect(provider.create({ id: "r-fail", runId: "run-k8s", network: "none" })).rejects.toMatchObject({
      kind: "create-failed",
      message: expect.stringContaining("DeadlineExceeded"),
    });
    await expect(provider.create({ id: "r-403", runId: "run-k8s", network: "none" })).rejects.toMatchObject({
      kind: "create-failed",
      message: expect.stringContaining("forbidden"),
    });
    await expect(provider.create({ id: "r-slow", runId: "run-k8s", network: "none" })).rejects.toMatchObject({ kind: "timeout" });
    const pods = posted(mock, "/pods");
    expect(pods).toHaveLength(3);
    for (const pod of pods) {
      expect((pod.metadata as { ownerReferences: { uid: string }[] }).ownerReferences[0].uid).toBe("6f1c1f0e-0d0b-4c3e-9c55-2b1f5a0e7a11");
    }
    expect(mock.unexpected).toEqual([]);
    expect(mock.pending()).toEqual([]);
  });

  it("reports a pod that vanished as died", async () => {
    const { mock, provider, backend } = await setup("pod-dies");
    const box = await provider.create({ id: "r-dies", runId: "run-k8s", network: "none" });
    expect((await box.exec(["echo", "alive"])).stdout).toBe("alive\n");
    await backend.deleted("reins-run-k8s-r-dies-71791d");
    mock.advance();
    await expect(box.exec(["true"])).rejects.toMatchObject({ kind: "died" });
    await box.destroy();
    expect(mock.unexpected).toEqual([]);
    expect(mock.pending()).toEqual([]);
  });
});

describe("a kubernetes rollout", () => {
  // The harness writes answer.txt in the pod; its processes are stopped and the workspace read
  // out of the pod (tar over the exec websocket); the pod is deleted and the verifier's command
  // check and script run in a fresh pod that holds a copy of the workspace; then it scores.
  const task = `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: answer, labels: {suite: t}}
spec:
  instruction: Write the answer into answer.txt
  workspace:
    files: [{path: notes/question.md, content: "what is six times seven?"}]
  hidden:
    files: [{path: expected.txt, content: "42"}]
  verifier:
    checks:
      - fileEquals: {path: answer.txt, hiddenFile: expected.txt}
      - fileContains: {path: notes/question.md, text: six times seven}
      - fileExists: notes/working.md
      - commandExitsZero: grep -qx 42 answer.txt
    script:
      command: ["sh", "-c", "if [ \\"$(cat answer.txt)\\" = \\"$(cat \\"$REINS_HIDDEN/expected.txt\\")\\" ]; then echo '{\\"reward\\": 1}'; else echo '{\\"reward\\": 0}'; fi"]
      timeoutSeconds: 30
    combine: {mode: weighted, weights: {checks: 1, script: 1}}
    passThreshold: 0.5
  timeoutSeconds: 60
`;

  it("is verified: the files its pod wrote are read over exec, its checks evaluated, and it gets a reward", async () => {
    const { mock, provider } = await setup("verified-rollout");
    const plan = planOf(writeSpecs(tempDir("reins-k8s-plan-"), evaluationYaml({ command: ["sh", "-c", "printf 42 > answer.txt"], tasks: task })));
    const [rollout] = plan.steps.flatMap((s) => s.rollouts);
    const harness = plan.harnesses[0];
    const { result } = await runRollout({ ...rollout, id: "r-0" }, 0, {
      runId: "run-k8s",
      provider,
      socketDir: tempDir("reins-k8s-sockets-"),
      harnesses: new Map([[harness.name, { harness, runtime: { pathDirs: [], node: process.execPath, reinsAgent: "/nonexistent" }, mounts: [] }]]),
      tasks: new Map(plan.tasks.map((t) => [t.name, t])),
      retries: 0,
      backoffMs: 10,
    });
    expect(result).toMatchObject({ status: "ok", tries: 1, harnessExit: { code: 0 } });
    const verifier = result.verifier as VerifierResult;
    const checks = verifier.parts.checks;
    expect(checks?.results.map((r) => r.pass)).toEqual([true, true, false, true]);
    expect(checks?.results[2].reason).toContain("notes/working.md");
    expect(verifier.parts.script).toMatchObject({ score: 1, exitCode: 0 });
    expect(result.reward).toBeCloseTo((0.75 + 1) / 2, 12);
    expect(result.passed).toBe(true);

    const commands = mock.execs.map((e) => e.command.join(" "));
    expect(commands.some((c) => c.includes("tar -c -f - -C /workspace ."))).toBe(true);
    expect(commands.some((c) => c.includes("grep -qx 42 answer.txt"))).toBe(true);
    expect(commands.some((c) => c.includes("tar -x -f - -C /"))).toBe(true);
    // The agent's processes were stopped in its pod before the copy; the verifier ran in its own pod.
    const podOf = (text: string) => mock.execs.filter((e) => e.command.join(" ").includes(text)).map((e) => e.pod);
    expect(podOf("kill -9 -1")).toContain("reins-run-k8s-r-0-3b13ed");
    expect(podOf("grep -qx 42 answer.txt")).toEqual(["reins-run-k8s-r-0-verify-f4cc5f"]);
    expect(new Set(podOf("REINS_HIDDEN"))).toEqual(new Set(["reins-run-k8s-r-0-verify-f4cc5f"]));
    // The verifier's pod runs as another user than the agent's.
    const pods = posted(mock, "/pods") as { spec: { securityContext: { runAsUser: number }; containers: { securityContext: { runAsUser: number } }[] } }[];
    expect(pods.map((p) => [p.spec.securityContext.runAsUser, p.spec.containers[0]!.securityContext.runAsUser])).toEqual([
      [1000, 1000],
      [1999, 1999],
    ]);
    for (const p of pods) expect(validateManifest(p)).toEqual([]);
    await provider.cleanupRun("run-k8s");
    expect(mock.unexpected).toEqual([]);
    expect(mock.pending()).toEqual([]);
  });
});
