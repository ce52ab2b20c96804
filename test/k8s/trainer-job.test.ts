/**
 * The GPU trainer's Kubernetes objects (indexed Job under torchrun, headless Service, weights
 * claim), built from a real compiled plan (examples/k8s) and variants of it, validated against the
 * real Kubernetes schemas (kubernetes-models) plus the strict unknown-field check.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { Job } from "kubernetes-models/batch/v1/Job";
import { Service } from "kubernetes-models/v1/Service";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { validate as validateJob } from "kubernetes-models/_schemas/IoK8sApiBatchV1Job";
import { validate as validateService } from "kubernetes-models/_schemas/IoK8sApiCoreV1Service";
import { validate as validateClaim } from "kubernetes-models/_schemas/IoK8sApiCoreV1PersistentVolumeClaim";
import { compilePlan, type Plan } from "../../src/compiler/index.js";
import type { ResolvedTrainer } from "../../src/compiler/contract/plan.js";
import { checkWithSchema, type ManifestIssue } from "../../src/runtime/k8s/validate.js";
import { isDnsLabel } from "../../src/runtime/sandbox/kubernetes/names.js";
import { ownerName } from "../../src/runtime/sandbox/kubernetes/objects.js";
import { buildTrainerObjects, OWNER_UID_PLACEHOLDER, planRunId, trainerJobName, type TrainerObjects } from "../../src/runtime/k8s/trainer-job.js";

type Obj = Record<string, any>;

let plan: Plan;
beforeAll(() => {
  delete process.env.VLLM_BASE_URL; // the example's engine URL defaults to the in-cluster service
  const r = compilePlan(["examples/k8s/experiment.yaml"], { projectRoot: "examples" });
  expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  plan = r.value as Plan;
});

const withTrainer = (p: Plan, t: Partial<ResolvedTrainer>, extra: Partial<Plan> = {}): Plan => ({ ...p, ...extra, trainer: { ...p.trainer!, ...t } });

function strictIssues(m: Obj): ManifestIssue[] {
  const validator = { Job: validateJob, Service: validateService, PersistentVolumeClaim: validateClaim }[m.kind as string];
  if (!validator) return [{ path: "", message: `no schema for ${m.kind}` }];
  return checkWithSchema(validator, m);
}

function expectValid(o: TrainerObjects): void {
  for (const m of [o.claim, o.service, o.job]) expect(strictIssues(m), `${m.kind} ${m.metadata.name}`).toEqual([]);
  expect(() => new Job(o.job as never).validate()).not.toThrow();
  expect(() => new Service(o.service as never).validate()).not.toThrow();
  expect(() => new PersistentVolumeClaim(o.claim as never).validate()).not.toThrow();
}

const trainerContainer = (o: TrainerObjects): Obj => (o.job.spec as Obj).template.spec.containers[0];

describe("trainer Job", () => {
  it("every variant passes the Kubernetes schemas with no unknown field", () => {
    const variants: Plan[] = [
      plan,
      withTrainer(plan, { nodes: 4, gpus: 8 }),
      withTrainer(plan, { device: "cpu", gpus: 0, image: undefined }),
      { ...plan, algorithm: { ...plan.algorithm!, type: "PPO" } },
    ];
    for (const p of variants) expectValid(buildTrainerObjects(p)!);
  });

  it("the strict check reports unknown and mistyped fields deep in the Job", () => {
    const job = structuredClone(buildTrainerObjects(plan)!.job) as Obj;
    job.spec.template.spec.containers[0].resources.limitz = "8";
    job.spec.podFailurePolicy.rules[1].onExitCode = {};
    job.spec.completions = "2";
    expect(strictIssues(job).map((i) => i.path)).toEqual([
      "/spec/completions",
      "/spec/podFailurePolicy/rules/1/onExitCode",
      "/spec/template/spec/containers/0/resources/limitz",
    ]);
  });

  it("runs torchrun as an indexed Job with GPU limits, rendezvous on pod 0 through the headless Service", () => {
    const p = withTrainer(plan, { nodes: 2, gpus: 4 });
    const o = buildTrainerObjects(p)!;
    const runId = planRunId(p);
    const name = trainerJobName(runId);
    const spec = o.job.spec as Obj;
    expect(o.job.metadata.name).toBe(name);
    expect(o.service.metadata.name).toBe(name);
    expect({ mode: spec.completionMode, completions: spec.completions, parallelism: spec.parallelism }).toEqual({
      mode: "Indexed",
      completions: 2,
      parallelism: 2,
    });
    expect(spec.backoffLimit).toBe(3);
    expect(spec.ttlSecondsAfterFinished).toBe(86400);
    expect(spec.podFailurePolicy.rules).toEqual([
      { action: "Ignore", onPodConditions: [{ type: "DisruptionTarget", status: "True" }] },
      { action: "FailJob", onExitCodes: { containerName: "trainer", operator: "In", values: [1, 2] } },
    ]);
    const pod = spec.template.spec;
    expect(pod.restartPolicy).toBe("Never");
    expect(pod.subdomain).toBe(o.service.metadata.name);
    const c = trainerContainer(o);
    expect(c.command).toEqual(["torchrun"]);
    const dir = `/checkpoints/${runId}`;
    expect(c.args).toEqual([
      "--nnodes=2",
      "--nproc_per_node=4",
      "--node_rank=$(JOB_COMPLETION_INDEX)",
      "--rdzv_backend=static",
      `--rdzv_endpoint=${name}-0.${name}:29500`,
      "--max_restarts=0",
      "--redirects=1",
      "--tee=1",
      "-m",
      "trainers.torch.worker",
      "--host=0.0.0.0",
      "--port=8000",
      `--model-dir=${dir}/model`,
      `--out-dir=${dir}`,
      "--device=cuda",
      `--seed=${p.seed}`,
      "--wait-for-model=600",
      `--lr=${p.algorithm!.learningRate}`,
    ]);
    expect(c.env[0]).toEqual({
      name: "JOB_COMPLETION_INDEX",
      valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } },
    });
    expect(c.resources).toEqual({ requests: { "nvidia.com/gpu": "4" }, limits: { "nvidia.com/gpu": "4" } });
    expect(pod.tolerations).toEqual([{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }]);
    expect(c.image).toBe("reins-trainer:latest");

    const svc = o.service.spec as Obj;
    expect(svc.clusterIP).toBe("None");
    expect(svc.publishNotReadyAddresses).toBe(true);
    for (const [k, v] of Object.entries(svc.selector as Record<string, string>)) expect(spec.template.metadata.labels[k]).toBe(v);
    expect(svc.ports.map((x: Obj) => x.port)).toEqual([8000, 29500]);
  });

  it("mounts the shared claim for weights and checkpoints and carries the engine's reload hook", () => {
    const o = buildTrainerObjects(plan)!;
    const pod = (o.job.spec as Obj).template.spec;
    const weights = pod.volumes.find((v: Obj) => v.name === "weights");
    expect(weights).toEqual({ name: "weights", persistentVolumeClaim: { claimName: o.claim.metadata.name } });
    expect((o.claim.spec as Obj).accessModes).toEqual(["ReadWriteMany"]);
    expect(o.claim.metadata.ownerReferences).toBeUndefined();
    expect(trainerContainer(o).volumeMounts).toContainEqual({ name: "weights", mountPath: "/checkpoints" });
    const root = `/checkpoints/${planRunId(plan)}/weights`;
    const hook = JSON.parse(o.job.metadata.annotations!["reins.dev/engine-reload"]!);
    expect(hook).toEqual({ method: "POST", url: "http://vllm.reins.svc:8000/update_weights_from_disk", body: { model_path: `${root}/<version>` } });
    expect(trainerContainer(o).env).toContainEqual({ name: "REINS_ENGINE_RELOAD_URL", value: hook.url });
    expect(trainerContainer(o).env).toContainEqual({ name: "REINS_WEIGHTS_ROOT", value: root });

    const custom = buildTrainerObjects(plan, { reloadPath: "/load_checkpoint", claimName: "shared-weights" })!;
    expect(JSON.parse(custom.job.metadata.annotations!["reins.dev/engine-reload"]!).url).toBe("http://vllm.reins.svc:8000/load_checkpoint");
    expect(custom.claim.metadata.name).toBe("shared-weights");

    // SGLang reloads from disk in one call; vLLM's reload is a sequence of calls the engine makes, not one URL.
    const sglang = buildTrainerObjects({
      ...plan,
      model: { ...plan.model!, engine: { type: "sglang", baseUrl: "http://sglang.reins.svc:30000", model: "m" } },
    })!;
    expect(JSON.parse(sglang.job.metadata.annotations!["reins.dev/engine-reload"]!).url).toBe("http://sglang.reins.svc:30000/update_weights_from_disk");
    const vllm = buildTrainerObjects({ ...plan, model: { ...plan.model!, engine: { type: "vllm", baseUrl: "http://vllm.reins.svc:8000", model: "m" } } })!;
    expect(vllm.job.metadata.annotations!["reins.dev/engine-reload"]).toBeUndefined();

    const scripted = buildTrainerObjects({ ...plan, model: { ...plan.model!, engine: { type: "scripted", script: [] } } })!;
    expect(scripted.job.metadata.annotations!["reins.dev/engine-reload"]).toBeUndefined();
    expect(trainerContainer(scripted).env.map((e: Obj) => e.name)).not.toContain("REINS_ENGINE_RELOAD_URL");
  });

  it("labels and owner: app.kubernetes.io/*, the run, the plan hash, a placeholder owner reference", () => {
    const o = buildTrainerObjects(plan)!;
    const runId = planRunId(plan);
    for (const m of [o.job, o.service]) {
      expect(m.metadata.labels).toMatchObject({
        "app.kubernetes.io/name": "reins",
        "app.kubernetes.io/managed-by": "reins",
        "app.kubernetes.io/component": "trainer",
        "reins.dev/run": runId,
        "reins.dev/plan-hash": plan.hash.slice(7, 23),
      });
      expect(m.metadata.annotations!["reins.dev/plan-hash"]).toBe(plan.hash);
      expect(m.metadata.ownerReferences).toEqual([
        { apiVersion: "v1", kind: "ConfigMap", name: ownerName(runId), uid: OWNER_UID_PLACEHOLDER, blockOwnerDeletion: false, controller: false },
      ]);
    }
    expect(buildTrainerObjects(plan, { ownerUid: "6f1c1f0e-0d0b-4c3e-9c55-2b1f5a0e7a11" })!.job.metadata.ownerReferences![0]!.uid).toBe(
      "6f1c1f0e-0d0b-4c3e-9c55-2b1f5a0e7a11",
    );
  });

  it("names stay DNS-1123 labels ≤ 63, pod hostnames included, for long experiment and run names", () => {
    const long = { ...withTrainer(plan, { nodes: 1000, gpus: 8 }), name: "An Experiment With A Very Long Name / for GRPO at scale ".repeat(3) };
    for (const runId of [undefined, "Run 2026/11/29 #7 ".repeat(6)]) {
      const o = buildTrainerObjects(long, runId ? { runId } : {})!;
      for (const m of [o.claim, o.service, o.job]) expect(isDnsLabel(m.metadata.name), m.metadata.name).toBe(true);
      expect(o.service.metadata.name).toMatch(/^[a-z]/);
      expect(isDnsLabel(`${o.job.metadata.name}-999`)).toBe(true);
      expectValid(o);
    }
    const a = buildTrainerObjects(plan, { runId: "run/a" })!;
    const b = buildTrainerObjects(plan, { runId: "run-a" })!;
    expect(a.job.metadata.name).not.toBe(b.job.metadata.name);
  });

  it("is deterministic and follows the plan", () => {
    expect(buildTrainerObjects(plan)).toEqual(buildTrainerObjects(structuredClone(plan)));
    expect(JSON.stringify(buildTrainerObjects(plan))).toBe(JSON.stringify(buildTrainerObjects(plan)));
    expect(buildTrainerObjects(withTrainer(plan, { mode: "local" }))).toBeNull();
    expect(buildTrainerObjects({ ...plan, trainer: undefined })).toBeNull();

    const cpu = buildTrainerObjects(withTrainer(plan, { device: "cpu", gpus: 0, checkpointDir: "checkpoints" }))!;
    expect(trainerContainer(cpu).resources).toBeUndefined();
    expect((cpu.job.spec as Obj).template.spec.tolerations).toBeUndefined();
    expect(trainerContainer(cpu).args).toContain("--nproc_per_node=1");
    expect(trainerContainer(cpu).args).toContain("--device=cpu");
    expect(trainerContainer(cpu).volumeMounts[0].mountPath).toBe("/reins/checkpoints");

    const ppo = buildTrainerObjects({ ...plan, algorithm: { ...plan.algorithm!, type: "PPO" } })!;
    expect(trainerContainer(ppo).args.at(-1)).toBe("--value-head");
  });
});
