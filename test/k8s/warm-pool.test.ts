/**
 * agent-sandbox v1 warm pools against the test cluster's real API server, with its stand-in
 * agent-sandbox controller (scripts/test-cluster-sandbox-controller.mjs; see the README). As a
 * researcher runs it, `sandbox: {provider: kubernetes, warmPool: N, kubernetes: {useSandboxClaims: true}}`:
 * - a plain Evaluation of command harnesses passes and its workspaces are verified; each rollout's
 *   pod came from the warm pool (the pod existed before its claim, without the rollout's identity,
 *   which was attached after the claim); no rollout env is in any pod spec; claims not yet Ready
 *   never exceeded maxStarting (watched);
 * - a pod deleted under a running rollout makes that rollout retry in a new sandbox, and the final
 *   results count only the retry;
 * - a claim whose sandbox cannot start (a pod no node can hold) fails as SandboxTimeout after
 *   startTimeoutSeconds: retried, then infra-failed, never a reward;
 * and nothing labelled by reins is left after each run.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reinsAsync } from "../reins-cli.js";
import { useTestCluster } from "./test-cluster.js";

const cluster = useTestCluster();
const PODS = "/api/v1/namespaces/default/pods?labelSelector=reins.dev%2Frun";
const CLAIMS = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims?labelSelector=reins.dev%2Frun";
const rv = (o: any) => Number(o.metadata.resourceVersion);

function writeEvaluation(dir: string, o: { script: string; tasks: string[]; attempts: number; sandbox: string }): string {
  const file = join(dir, "evaluation.yaml");
  const tasks = o.tasks
    .map(
      (t) => `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: ${t}, labels: {suite: warm}}
spec:
  instruction: ${t}
  workspace: {files: [{path: given.txt, content: "given\\n"}]}
  verifier: {checks: [{fileContains: {path: answer.txt, text: "given\\nhello"}}]}
---
`,
    )
    .join("");
  writeFileSync(
    file,
    `apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: writer}
spec:
  command: [sh, -c, '${o.script}', writer, "{{instruction}}"]
---
${tasks}apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: warm-pool}
spec:
  tasks: [{labels: {suite: warm}}]
  harnesses: [{name: writer}]
  attempts: ${o.attempts}
  sandbox: ${o.sandbox}
`,
  );
  return file;
}

function results(run: string): any[] {
  return readFileSync(join(run, "rollouts.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

describe("a plain Evaluation on agent-sandbox warm pools", () => {
  it("takes warm pods through claims, attaches each rollout's identity after its claim, and keeps maxStarting", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-warm-"));
    const pods = new Map<string, { added: number; addedLabels: Record<string, string>; env: string[]; labelled?: number }>();
    const claims = new Map<string, { added: number; ready?: number; sandbox?: string }>();
    const notReady = new Set<string>();
    let mostNotReady = 0;
    const stopPods = await cluster.watch(PODS, (type, pod) => {
      const name = pod.metadata.name;
      if (type === "ADDED" && !pods.has(name))
        pods.set(name, {
          added: rv(pod),
          addedLabels: { ...pod.metadata.labels },
          env: pod.spec.containers.flatMap((c: any) => (c.env ?? []).map((e: any) => e.name)),
        });
      const seen = pods.get(name);
      if (seen && seen.labelled === undefined && pod.metadata.labels?.["reins.dev/rollout"]) seen.labelled = rv(pod);
    });
    const stopClaims = await cluster.watch(CLAIMS, (type, claim) => {
      const name = claim.metadata.name;
      if (type === "ADDED") {
        claims.set(name, { added: rv(claim) });
        notReady.add(name);
      }
      const ready = (claim.status?.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True");
      if (ready && claims.get(name) && claims.get(name)!.ready === undefined)
        Object.assign(claims.get(name)!, { ready: rv(claim), sandbox: claim.status.sandbox.name });
      if (ready || type === "DELETED") notReady.delete(name);
      mostNotReady = Math.max(mostNotReady, notReady.size);
    });
    try {
      const file = writeEvaluation(dir, {
        script: 'cat given.txt > answer.txt && printf "%s" "$1" >> answer.txt',
        tasks: ["hello", "bye"],
        attempts: 3,
        sandbox: "{provider: kubernetes, concurrency: 3, timeoutSeconds: 120, retries: 0, warmPool: 3, kubernetes: {useSandboxClaims: true, maxStarting: 1}}",
      });
      const r = await reinsAsync(["eval", file, "--json", "--out", join(dir, "run")], { env: { KUBECONFIG: cluster.kubeconfig } });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ rollouts: 6, errors: 0, meanReward: 0.5 });
      const byTask = results(join(dir, "run"))
        .map((x) => `${x.task} ${x.status} ${x.reward} ${x.tries}`)
        .sort();
      expect(byTask).toEqual(["bye ok 0 1", "bye ok 0 1", "bye ok 0 1", "hello ok 1 1", "hello ok 1 1", "hello ok 1 1"]);
      // Every rollout's claim got a pod that existed before the claim, unlabelled by any rollout,
      // and the rollout's identity reached that pod only after the claim.
      expect(claims.size).toBe(6);
      for (const [name, c] of claims) {
        expect(c.sandbox, name).toBeDefined();
        const pod = pods.get(c.sandbox!)!;
        expect(pod, c.sandbox).toBeDefined();
        expect(pod.added).toBeLessThan(c.added);
        expect(pod.addedLabels["agents.x-k8s.io/launch-type"]).toBe("warm");
        expect(pod.addedLabels["reins.dev/rollout"]).toBeUndefined();
        expect(pod.labelled).toBeGreaterThan(c.ready!);
      }
      // The pods' specs hold no rollout's env: it goes with each exec.
      for (const pod of pods.values()) expect(pod.env.sort()).toEqual(["HOME", "TMPDIR"]);
      expect(mostNotReady).toBeLessThanOrEqual(1);
      expect(await cluster.leftovers()).toEqual([]);
    } finally {
      stopPods();
      stopClaims();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe("infrastructure failures on warm pools", () => {
  it("a pod deleted under a running rollout: the rollout retries in a new sandbox, and only the retry counts", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-evict-"));
    let deleted = "";
    const stop = await cluster.watch(PODS, (_type, pod) => {
      if (deleted || !pod.metadata.labels?.["reins.dev/rollout"] || pod.metadata.deletionTimestamp) return;
      deleted = pod.metadata.name;
      // Once the harness runs (it sleeps 4 s), the pod goes, as an eviction would take it.
      setTimeout(() => void cluster.del(`/api/v1/namespaces/default/pods/${deleted}`), 1500);
    });
    try {
      const file = writeEvaluation(dir, {
        script: 'sleep 4; cat given.txt > answer.txt && printf "%s" "$1" >> answer.txt',
        tasks: ["hello"],
        attempts: 2,
        sandbox: "{provider: kubernetes, concurrency: 2, timeoutSeconds: 120, retries: 2, warmPool: 2, kubernetes: {useSandboxClaims: true}}",
      });
      const r = await reinsAsync(["eval", file, "--json", "--out", join(dir, "run")], { env: { KUBECONFIG: cluster.kubeconfig } });
      expect(r.code, r.stderr).toBe(0);
      expect(deleted).not.toBe("");
      expect(JSON.parse(r.stdout)).toMatchObject({ rollouts: 2, errors: 0, meanReward: 1, infraFailures: 0 });
      const all = results(join(dir, "run"));
      expect(all.map((x) => [x.status, x.reward])).toEqual([
        ["ok", 1],
        ["ok", 1],
      ]);
      const retried = all.filter((x) => x.tries === 2);
      expect(retried).toHaveLength(1);
      expect(retried[0].retries.map((x: any) => x.code)).toEqual(["SandboxDied"]);
      expect(await cluster.leftovers()).toEqual([]);
    } finally {
      stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it("a claim whose sandbox never starts: SandboxTimeout after startTimeoutSeconds, retried, then infra-failed without a reward", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-stuck-"));
    try {
      // No node has 1000 CPUs: the cold pod of each claim (warmPool 0) stays Pending.
      const file = writeEvaluation(dir, {
        script: "true",
        tasks: ["hello"],
        attempts: 1,
        sandbox:
          '{provider: kubernetes, timeoutSeconds: 60, retries: 1, resources: {cpu: "1000"}, warmPool: 0, kubernetes: {useSandboxClaims: true, startTimeoutSeconds: 2}}',
      });
      const r = await reinsAsync(["eval", file, "--json", "--out", join(dir, "run")], { env: { KUBECONFIG: cluster.kubeconfig } });
      expect(r.code, r.stderr).toBe(1);
      const [x] = results(join(dir, "run"));
      expect(x).toMatchObject({ status: "infra-failed", reward: null, tries: 2, error: { code: "SandboxTimeout" } });
      expect(x.retries.map((e: any) => e.code)).toEqual(["SandboxTimeout", "SandboxTimeout"]);
      expect(JSON.parse(r.stdout)).toMatchObject({ infraFailures: 1 });
      expect(await cluster.leftovers()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
