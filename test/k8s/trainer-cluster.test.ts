/**
 * `reins run` with a kubernetes trainer against the test cluster (scripts/test-cluster.sh), as
 * examples/k8s/test-cluster.yaml has it: rollouts in pods calling the policy through the proxy,
 * the trainer's weights claim, headless Service and indexed Job created on the cluster:
 * - worker: cluster (the example's default): the Job's pod runs torchrun with the reference worker
 *   (the node agent runs it in the pod's namespaces, scripts/test-cluster-command.mjs); two steps
 *   train through it, each publishing a new weights version, the pod ends Succeeded with exit 0
 *   after the worker's "listening" line, and nothing is left afterwards;
 * - worker: local (the example with that one change, written next to its policy under .reins/,
 *   which git ignores): the Job is created and rank 0's pod awaited, the
 *   worker runs on this machine; two steps train, every trained token the one sampled, and nothing
 *   is left afterwards (the Job, its pods, the Service and the claim with its volume);
 * - worker: cluster killed with SIGKILL once its worker answers, then `--resume`: the claim (with
 *   the staged policy) and the Job are found, the run finishes, and nothing is left.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { reinsAsync, spawnReins } from "../reins-cli.js";
import { useTestCluster } from "./test-cluster.js";

const cluster = useTestCluster();
const EXAMPLE = "examples/k8s/test-cluster.yaml";
const LOCAL_WORKER_EXAMPLE = resolve(".reins/k8s-example/test-cluster-local-worker.yaml");

/** The example with `worker: local`, in .reins/k8s-example/ (its policy's directory, git-ignored). */
function localWorkerExample(): string {
  const text = readFileSync(EXAMPLE, "utf8");
  const edited = text.replace("worker: cluster,", "worker: local,").replaceAll("../../.reins/k8s-example/policy", "policy");
  expect(edited.match(/worker: local,/g)).toHaveLength(1);
  mkdirSync(".reins/k8s-example", { recursive: true });
  writeFileSync(LOCAL_WORKER_EXAMPLE, edited);
  return LOCAL_WORKER_EXAMPLE;
}

/** What the trainer has on the cluster now: its Jobs, Services and claims. */
async function trainerObjects(): Promise<string[]> {
  const lists = await Promise.all([
    cluster.get("/apis/batch/v1/namespaces/default/jobs?labelSelector=app.kubernetes.io%2Fcomponent%3Dtrainer"),
    cluster.get("/api/v1/namespaces/default/services?labelSelector=app.kubernetes.io%2Fcomponent%3Dtrainer"),
    cluster.get("/api/v1/namespaces/default/persistentvolumeclaims?labelSelector=app.kubernetes.io%2Fcomponent%3Dweights"),
  ]);
  return lists.flatMap((l, i) => l.items.map((o: any) => `${["job", "service", "claim"][i]}/${o.metadata.name}`)).sort();
}

/** The trainer pods' last states while `work` runs: name → {phase, exitCode}. */
async function watchTrainerPods<T>(work: () => Promise<T>): Promise<{ result: T; pods: Map<string, { phase?: string; exitCode?: number }> }> {
  const pods = new Map<string, { phase?: string; exitCode?: number }>();
  const stop = await cluster.watch("/api/v1/namespaces/default/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dtrainer", (_type, pod) => {
    const ended = pod.status?.containerStatuses?.[0]?.state?.terminated;
    const was = pods.get(pod.metadata.name);
    // The last phase the pod had before deletion (the garbage collector's delete keeps its status).
    pods.set(pod.metadata.name, { phase: pod.status?.phase ?? was?.phase, exitCode: ended?.exitCode ?? was?.exitCode });
  });
  try {
    return { result: await work(), pods };
  } finally {
    stop();
  }
}

describe("examples/k8s/test-cluster.yaml", () => {
  it("worker: cluster: the Job's pod runs torchrun with the worker, two steps train through it, nothing is left", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-run-cluster-"));
    try {
      const { result: r, pods } = await watchTrainerPods(() =>
        reinsAsync(["run", EXAMPLE, "--json", "--out", join(dir, "run")], { env: { KUBECONFIG: cluster.kubeconfig } }),
      );
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.steps).toBe(2);
      // The initial policy, then one new version per trained step, all different.
      expect(out.versions).toHaveLength(3);
      expect(new Set(out.versions).size).toBe(3);
      expect(out.fidelity.byHarness["curl-chat"]).toMatchObject({ rollouts: 8, calls: 8, mismatchedTrainedTokens: 0, prefixBreaks: 0 });
      expect(r.stderr).toContain("trainer: staged the initial policy in the weights claim");
      expect(r.stderr).toMatch(/trainer: the worker in pod \S+ answers at http:\/\/127\.0\.0\.1:\d+/);
      // No worker process on this machine: trainer.log is the local worker's stderr.
      expect(existsSync(join(dir, "run", "trainer.log"))).toBe(false);
      // One rank pod; it ran torchrun → the worker, and succeeded once the worker was asked to exit.
      expect([...pods.values()]).toEqual([{ phase: "Succeeded", exitCode: 0 }]);
      const [pod] = [...pods.keys()];
      const log = readFileSync(join(cluster.dir, "logs", "pods", `default_${pod}.log`), "utf8");
      expect(log).toMatch(/\[default0\]:\{"event": "listening", .*"device": "cpu", "worldSize": 1\}/);
      expect(await cluster.leftovers()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);

  it("worker: local: trains two steps with the trainer's Job on the cluster and leaves nothing behind", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-run-"));
    try {
      const seen = new Set<string>();
      let running = true;
      const watch = (async () => {
        while (running) {
          for (const o of await trainerObjects()) seen.add(o.replace(/-[0-9a-f]{6}$/, ""));
          await new Promise((r) => setTimeout(r, 300));
        }
      })();
      const r = await reinsAsync(["run", localWorkerExample(), "--json", "--out", join(dir, "run")], { env: { KUBECONFIG: cluster.kubeconfig } });
      running = false;
      await watch;
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.steps).toBe(2);
      expect(out.fidelity.byHarness["curl-chat"]).toMatchObject({ rollouts: 8, calls: 8, mismatchedTrainedTokens: 0, prefixBreaks: 0 });
      expect(out.fidelity.byHarness["curl-chat"].checkedTrainedTokens).toBeGreaterThan(0);
      expect(r.stderr).toMatch(/trainer: Job reins-trainer-run-[0-9a-f]+-[0-9a-f]+, rank 0 is pod \S+ at 10\.244\.\d+\.\d+/);
      expect(existsSync(join(dir, "run", "trainer.log"))).toBe(true);
      expect([...seen].map((n) => n.replace(/run-[0-9a-f]{12}/, "run-X")).sort()).toEqual([
        "claim/reins-weights-k8s-test-cluster",
        "job/reins-trainer-run-X",
        "service/reins-trainer-run-X",
      ]);
      expect(await cluster.leftovers()).toEqual([]);
    } finally {
      rmSync(LOCAL_WORKER_EXAMPLE, { force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);

  it("worker: cluster, killed once its worker answers, resumes with the claim and Job it left, then leaves nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-run-kill-"));
    try {
      const run = join(dir, "run");
      mkdirSync(join(dir, "tmp"));
      const child = spawnReins(["run", EXAMPLE, "--out", run], {
        env: { KUBECONFIG: cluster.kubeconfig, TMPDIR: join(dir, "tmp") },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr!.on("data", (d) => (stderr += d));
      for (let i = 0; i < 1200 && !/the worker in pod \S+ answers/.test(stderr); i++) await new Promise((r) => setTimeout(r, 100));
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      expect(stderr).toMatch(/the worker in pod \S+ answers/);
      expect((await trainerObjects()).some((o) => o.startsWith("claim/reins-weights-"))).toBe(true);
      const r = await reinsAsync(["run", "--resume", run, "--json"], { env: { KUBECONFIG: cluster.kubeconfig } });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain("found: an earlier run of this experiment left it");
      // The policy staged by the killed run is in the claim: not staged again.
      expect(r.stderr).not.toContain("staged the initial policy");
      expect(JSON.parse(r.stdout).steps).toBe(2);
      expect(await cluster.leftovers()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);
});
