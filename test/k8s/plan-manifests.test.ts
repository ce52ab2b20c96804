/**
 * The Kubernetes objects `reins plan` attaches: the sandbox Pod of one rollout (kubernetes and
 * podman providers, or the agent-sandbox objects), the run owner and the trainer objects, each
 * validated against the real Kubernetes schemas plus the strict unknown-field check; determinism;
 * and the CLI writing them into plan.json without changing the plan hash.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Job } from "kubernetes-models/batch/v1/Job";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Pod } from "kubernetes-models/v1/Pod";
import { Service } from "kubernetes-models/v1/Service";
import { validate as validateJob } from "kubernetes-models/_schemas/IoK8sApiBatchV1Job";
import { validate as validateService } from "kubernetes-models/_schemas/IoK8sApiCoreV1Service";
import { validate as validateClaim } from "kubernetes-models/_schemas/IoK8sApiCoreV1PersistentVolumeClaim";
import { compilePlan, type Plan } from "../../src/compiler/index.js";
import type { ResolvedSandbox } from "../../src/compiler/contract/plan.js";
import { checkWithSchema, validateManifest, type ManifestIssue } from "../../src/runtime/k8s/validate.js";
import { isDnsLabel } from "../../src/runtime/sandbox/kubernetes/names.js";
import { podName } from "../../src/runtime/sandbox/kubernetes/manifests.js";
import { ownerName } from "../../src/runtime/sandbox/kubernetes/objects.js";
import { planManifests } from "../../src/runtime/k8s/plan-manifests.js";
import type { Manifest } from "../../src/runtime/sandbox/kubernetes/objects.js";
import { findExecutable } from "../../src/runtime/sandbox/host/executables.js";
import { preparePodmanCli, runPodman } from "../../src/runtime/sandbox/podman/cli.js";
import { adaptPodForPodman } from "../../src/runtime/sandbox/podman/manifest.js";
import { OWNER_UID_PLACEHOLDER, planRunId } from "../../src/runtime/k8s/trainer-job.js";
import { reins } from "../reins-cli.js";

type Obj = Record<string, any>;
const podman = findExecutable("podman");
const skipPodman = !podman && process.env.REINS_SKIP_PODMAN === "1";
const EXAMPLE = "examples/k8s/experiment.yaml";

let plan: Plan;
let out: string;
beforeAll(() => {
  delete process.env.VLLM_BASE_URL;
  const r = compilePlan([EXAMPLE], { projectRoot: "examples" });
  expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  plan = r.value as Plan;
  out = mkdtempSync(join(tmpdir(), "reins-plan-manifests-"));
});
afterAll(() => rmSync(out, { recursive: true, force: true }));

const SCHEMAS: Record<string, (data: unknown) => boolean> = {
  "batch/v1/Job": validateJob,
  "v1/Service": validateService,
  "v1/PersistentVolumeClaim": validateClaim,
};
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  "batch/v1/Job": Job,
  "v1/Service": Service,
  "v1/PersistentVolumeClaim": PersistentVolumeClaim,
  "v1/Pod": Pod,
  "v1/ConfigMap": ConfigMap,
};

function strictIssues(m: Obj): ManifestIssue[] {
  const schema = SCHEMAS[`${m.apiVersion}/${m.kind}`];
  return schema ? checkWithSchema(schema, m) : validateManifest(m);
}

function expectAllValid(manifests: Obj[]): void {
  for (const m of manifests) {
    const key = `${m.apiVersion}/${m.kind}`;
    expect(strictIssues(m), `${key} ${m.metadata.name}`).toEqual([]);
    const Model = MODELS[key];
    if (Model) expect(() => new Model(m as never).validate(), key).not.toThrow();
    expect(isDnsLabel(m.metadata.name), m.metadata.name).toBe(true);
  }
}

const sandbox = (p: Plan, s: Partial<ResolvedSandbox>): Plan => ({ ...p, sandbox: { ...p.sandbox, ...s } });
const kinds = (ms: Obj[]) => ms.map((m) => m.kind);

describe("plan manifests", () => {
  it("kubernetes sandbox + GPU trainer: owner, one rollout's Pod, claim, Service, Job, all valid", () => {
    const ms = planManifests(plan) as Obj[];
    expect(kinds(ms)).toEqual(["ConfigMap", "Pod", "PersistentVolumeClaim", "Service", "Job"]);
    expectAllValid(ms);
    const runId = planRunId(plan);
    const [owner, pod] = ms as [Obj, Obj];
    expect(owner.metadata.name).toBe(ownerName(runId));
    const first = plan.steps[0]!.rollouts[0]!;
    expect(pod.metadata.name).toBe(podName({ runId, rolloutId: first.id }));
    expect(pod.metadata.namespace).toBe("reins");
    expect(pod.metadata.labels).toMatchObject({ "reins.dev/run": runId, "reins.dev/rollout": first.id, "app.kubernetes.io/component": "sandbox" });
    expect(pod.metadata.ownerReferences).toEqual([
      { apiVersion: "v1", kind: "ConfigMap", name: owner.metadata.name, uid: OWNER_UID_PLACEHOLDER, blockOwnerDeletion: false, controller: false },
    ]);
    const task = plan.tasks.find((t) => t.name === first.task)!;
    expect(pod.spec.activeDeadlineSeconds).toBe(task.timeoutSeconds);
    expect(pod.spec.containers[0].image).toBe("localhost/reins-sandbox:1");
    expect(pod.spec.containers[0].resources.limits).toEqual({ cpu: "2", memory: "4096Mi", "ephemeral-storage": "3072Mi" });
    for (const m of ms.slice(3)) expect(m.metadata.ownerReferences[0].name).toBe(owner.metadata.name);
  });

  it("podman: the Pod as the podman provider builds it (no namespace owner, no API server)", () => {
    const ms = planManifests(sandbox({ ...plan, trainer: { ...plan.trainer!, mode: "local" } }, { provider: "podman", kubernetes: undefined })) as Obj[];
    expect(kinds(ms)).toEqual(["Pod"]);
    expectAllValid(ms);
    expect(ms[0]!.metadata.namespace).toBe("default");
    expect(ms[0]!.metadata.ownerReferences).toBeUndefined();

    const withTrainer = planManifests(sandbox(plan, { provider: "podman", kubernetes: undefined })) as Obj[];
    expect(kinds(withTrainer)).toEqual(["ConfigMap", "Pod", "PersistentVolumeClaim", "Service", "Job"]);
    expectAllValid(withTrainer);
  });

  it("agent-sandbox warm pools: SandboxTemplate, SandboxWarmPool and the rollout's SandboxClaim", () => {
    const k = plan.sandbox.kubernetes!;
    const ms = planManifests(sandbox(plan, { warmPool: 4, kubernetes: { ...k, useSandboxClaims: true, runtimeClassName: "gvisor" } })) as Obj[];
    expect(kinds(ms)).toEqual(["ConfigMap", "SandboxTemplate", "SandboxWarmPool", "SandboxClaim", "PersistentVolumeClaim", "Service", "Job"]);
    expectAllValid(ms);
    expect(ms[2]!.spec.replicas).toBe(4);
    expect(ms[1]!.spec.podTemplate.spec.runtimeClassName).toBe("gvisor");
  });

  it("nothing for local sandboxes and a local trainer", () => {
    expect(planManifests(sandbox({ ...plan, trainer: { ...plan.trainer!, mode: "local" } }, { provider: "local" }))).toEqual([]);
  });

  it("is deterministic: two compilations of the same specs give identical manifests", () => {
    const again = compilePlan([EXAMPLE], { projectRoot: "examples" }).value as Plan;
    expect(JSON.stringify(planManifests(again))).toBe(JSON.stringify(planManifests(plan)));
  });

  it("`reins plan --out` writes them into plan.json and the plan hash does not change", () => {
    const file = join(out, "plan.json");
    const r = reins(["plan", EXAMPLE, "--project-root", "examples", "--json", "--out", file], { env: { VLLM_BASE_URL: undefined } });
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.ok).toBe(true);
    expect(summary.hash).toBe(plan.hash);
    const written = JSON.parse(readFileSync(file, "utf8")) as Plan;
    expect(written.hash).toBe(plan.hash);
    expect(written.manifests).toEqual(planManifests(plan));
    const job = written.manifests.find((m) => m.kind === "Job") as Obj;
    expect(job.spec.template.spec.containers[0].resources.limits).toEqual({ "nvidia.com/gpu": "8" });
  });

  it.skipIf(skipPodman)("the Pod in the plan plays with `podman kube play` (podman provider's adaptation)", async () => {
    if (!podman) throw new Error("podman is not installed (apt-get install -y podman runc catatonit busybox-static socat), or set REINS_SKIP_PODMAN=1");
    execFileSync("bash", [resolve("scripts/build-image.sh")], { stdio: "ignore" });
    const pod = planManifests(sandbox(plan, { provider: "podman", kubernetes: undefined })).find((m) => m.kind === "Pod") as Manifest;
    const dirs = { workspaceHost: join(out, "ws"), homeHost: join(out, "home"), tmpHost: join(out, "tmp") };
    for (const d of Object.values(dirs)) {
      mkdirSync(d);
      chownSync(d, 1000, 1000);
    }
    chmodSync(dirs.tmpHost, 0o1777);
    const file = join(out, "pod.yaml");
    writeFileSync(file, stringify(adaptPodForPodman(pod, dirs)));
    const cli = await preparePodmanCli(podman, out);
    try {
      const play = await runPodman(cli, ["kube", "play", "--network", "none", "--replace", file]);
      expect(play.code, play.stderr).toBe(0);
      const run = await runPodman(cli, [
        "exec",
        `${pod.metadata.name}-sandbox`,
        "sh",
        "-c",
        "id -u; pwd; echo hi > x; cat x; touch /etc/x 2>/dev/null || echo read-only",
      ]);
      expect(run.stdout.trim().split("\n")).toEqual(["1000", "/workspace", "hi", "read-only"]);
      expect(readFileSync(join(dirs.workspaceHost, "x"), "utf8")).toBe("hi\n");
    } finally {
      await runPodman(cli, ["kube", "down", file]);
    }
  });
});
