/**
 * `reins run` with a kubernetes trainer against the test cluster (scripts/test-cluster.sh), as
 * examples/k8s/test-cluster.yaml has it: rollouts in pods calling the policy through the proxy,
 * the trainer's weights claim, headless Service and indexed Job created on the cluster and rank 0's
 * pod awaited, the worker on this machine (worker: local; the cluster's pods are simulated):
 * - two steps train, every trained token the one sampled, and nothing is left afterwards (the
 *   Job, its pods, the Service and the claim with its volume);
 * - killed with SIGKILL once the Job is up, then `--resume`: the claim is found, the run finishes,
 *   and nothing is left.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { reinsAsync } from "../reins-cli.js";
import { useTestCluster } from "./test-cluster.js";

const cluster = useTestCluster();
const EXAMPLE = "examples/k8s/test-cluster.yaml";

/** What the trainer has on the cluster now: its Jobs, Services and claims. */
async function trainerObjects(): Promise<string[]> {
  const lists = await Promise.all([
    cluster.get("/apis/batch/v1/namespaces/default/jobs?labelSelector=app.kubernetes.io%2Fcomponent%3Dtrainer"),
    cluster.get("/api/v1/namespaces/default/services?labelSelector=app.kubernetes.io%2Fcomponent%3Dtrainer"),
    cluster.get("/api/v1/namespaces/default/persistentvolumeclaims?labelSelector=app.kubernetes.io%2Fcomponent%3Dweights"),
  ]);
  return lists.flatMap((l, i) => l.items.map((o: any) => `${["job", "service", "claim"][i]}/${o.metadata.name}`)).sort();
}

describe("examples/k8s/test-cluster.yaml", () => {
  it("trains two steps with the trainer's Job on the cluster and leaves nothing behind", async () => {
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
      const r = await reinsAsync(["run", EXAMPLE, "--json", "--out", join(dir, "run")], { KUBECONFIG: cluster.kubeconfig });
      running = false;
      await watch;
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.steps).toBe(2);
      expect(out.fidelity.byHarness["curl-chat"]).toMatchObject({ rollouts: 8, calls: 8, mismatchedTrainedTokens: 0, prefixBreaks: 0 });
      expect(out.fidelity.byHarness["curl-chat"].checkedTrainedTokens).toBeGreaterThan(0);
      expect(r.stderr).toMatch(/trainer: Job reins-trainer-run-[0-9a-f]+-[0-9a-f]+, rank 0 is pod \S+ at 10\.244\.\d+\.\d+/);
      expect([...seen].map((n) => n.replace(/run-[0-9a-f]{12}/, "run-X")).sort()).toEqual(["claim/reins-weights-k8s-test-cluster", "job/reins-trainer-run-X", "service/reins-trainer-run-X"]);
      expect(await cluster.leftovers()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);

  it("killed once its Job is up, resumes with the claim it left, then leaves nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-run-kill-"));
    try {
      const run = join(dir, "run");
      mkdirSync(join(dir, "tmp"));
      const child = spawn(process.execPath, [resolve("bin/reins.js"), "run", EXAMPLE, "--out", run], { env: { ...process.env, KUBECONFIG: cluster.kubeconfig, TMPDIR: join(dir, "tmp") }, stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      for (let i = 0; i < 1200 && !/rank 0 is pod/.test(stderr); i++) await new Promise((r) => setTimeout(r, 100));
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      expect(stderr).toMatch(/rank 0 is pod/);
      expect((await trainerObjects()).some((o) => o.startsWith("claim/reins-weights-"))).toBe(true);
      const r = await reinsAsync(["run", "--resume", run, "--json"], { KUBECONFIG: cluster.kubeconfig });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain("found: an earlier run of this experiment left it");
      expect(JSON.parse(r.stdout).steps).toBe(2);
      expect(await cluster.leftovers()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);
});
