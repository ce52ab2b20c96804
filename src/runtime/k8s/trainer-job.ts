/**
 * Pure builders of the Kubernetes objects for a GPU trainer (`trainer.mode: kubernetes`): an
 * indexed Job running the reference worker under `torchrun`, a headless Service for rendezvous and
 * for reaching rank 0's HTTP port, and the PersistentVolumeClaim that holds weights and checkpoints.
 *
 * Topology. The Job has `completionMode: Indexed` and `completions = parallelism = nodes`; pod i
 * gets hostname `<job>-<i>` and, through `subdomain`, the DNS name `<job>-<i>.<service>`. torchrun
 * uses the static rendezvous with `--node-rank=$(JOB_COMPLETION_INDEX)` and pod 0 as the host, so
 * global rank 0 (the rank that serves the trainer protocol over HTTP, trainers/torch/worker.py)
 * always lives in pod 0: a control plane inside the cluster reaches it at
 * `http://<job>-0.<service>.<ns>.svc:<port>` (annotation `reins.dev/trainer-url`); `reins run`,
 * outside, at rank 0's pod address (trainer-cluster.ts). The Service is headless and publishes not-ready addresses,
 * so the names resolve before any readiness.
 *
 * Shared volume. The claim is mounted at the trainer's `checkpointDir` (a relative one under
 * /reins); each run writes under `<checkpointDir>/<runId>`: `weights/<version>/` (model.safetensors,
 * config.json, READY; written by `save_weights`), `checkpoints/step-N/`, and `model/`, the initial
 * policy the run stages there (the worker's `--model-dir`). The claim belongs to the experiment,
 * not the run (no ownerReference), so deleting a run keeps what a resume needs.
 *
 * Reload hook (how a new weights version reaches the engine). Chosen: the control plane, which
 * already calls `save_weights` and knows the version, POSTs `{"model_path": "<weightsRoot>/<version>"}`
 * to the engine's reload URL; the engine mounts the same claim read-only at the same path, so
 * the directory names the same bytes on both sides. No sidecar: a watcher would race the control
 * plane's own bookkeeping of which version each call used. The Job and its pods carry the hook as
 * the annotation `reins.dev/engine-reload` (JSON: method, url, body) and the env
 * REINS_ENGINE_RELOAD_URL / REINS_WEIGHTS_ROOT. The default path `/update_weights_from_disk` with
 * `model_path` is SGLang's native route; a stock `vllm serve` has no route that reloads from disk,
 * so a vLLM engine needs a server wrapper that answers this path and body (set `reloadPath`).
 *
 * Failures. `restartPolicy: Never`; a podFailurePolicy ignores disruptions (preemption, eviction:
 * the pod is recreated without counting) and fails the Job at once when the worker exits by itself
 * with 1 (refused to start, or crashed) or 2 (usage): rerunning would fail the same way, and the
 * control plane resumes from the last checkpoint. Other failures (OOM kill, lost node) count
 * against `backoffLimit`. Everything the run creates points to the run's owner ConfigMap
 * (manifests.ts); its uid is unknown at plan time, so the plan carries OWNER_UID_PLACEHOLDER and
 * the runtime fills the real uid in when it creates the owner.
 */
import { posix } from "node:path";
import type { Plan, ResolvedTrainer } from "../../compiler/contract/plan.js";
import { dnsName, labelValue } from "../sandbox/kubernetes/names.js";
import { ownerName, ownerReference, runLabels, type Manifest, type ObjectMeta } from "../sandbox/kubernetes/objects.js";

export const TRAINER_CONTAINER = "trainer";
export const OWNER_UID_PLACEHOLDER = "00000000-0000-0000-0000-000000000000";
export const DEFAULT_TRAINER_IMAGE = "reins-trainer:latest";
export const GPU_RESOURCE = "nvidia.com/gpu";
/** How long the worker waits for reins to stage the initial policy in the claim. */
export const MODEL_WAIT_SECONDS = 600;
const COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index";

export interface TrainerJobOptions {
  /** Default: the executor's run id for this plan (planRunId). */
  runId?: string;
  /** Default: the sandbox's kubernetes namespace, else "default". */
  namespace?: string;
  /** PersistentVolumeClaim for weights and checkpoints. Default: derived from the experiment's name. */
  claimName?: string;
  /** Size and class of that claim (default 200Gi, the cluster's default class). */
  storage?: string;
  storageClassName?: string;
  /** Rank 0's trainer-protocol port (default 8000) and torchrun's rendezvous port (default 29500). */
  port?: number;
  rendezvousPort?: number;
  /** Where the image holds this repository's `trainers/` package (default /opt/reins). */
  workDir?: string;
  /** The initial policy (reins format: config.json + model.safetensors). Default `<runDir>/model`. */
  modelDir?: string;
  /** Engine route that loads a weights directory (default /update_weights_from_disk, body {model_path}). */
  reloadPath?: string;
  ttlSecondsAfterFinished?: number;
  backoffLimit?: number;
  /** The run owner's uid when known (default OWNER_UID_PLACEHOLDER). */
  ownerUid?: string;
}

export interface TrainerObjects {
  claim: Manifest;
  service: Manifest;
  job: Manifest;
}

/** The run id the executor gives a run of this plan (`run-<12 hex of the plan hash>`). */
export function planRunId(plan: Pick<Plan, "hash">): string {
  return `run-${plan.hash.slice(7, 19)}`;
}

/** The plan hash as a label value (16 hex digits; the full hash is an annotation). */
export function planHashLabel(hash: string): string {
  return hash.replace(/^sha256:/, "").slice(0, 16);
}

/** The Job (and headless Service) name; short enough that `<job>-<index>` stays a DNS label. */
export function trainerJobName(runId: string): string {
  return dnsName(["reins-trainer", runId], 56);
}

export function weightsClaimName(experiment: string): string {
  return dnsName(["reins-weights", experiment]);
}

/** Where the claim is mounted in the trainer (and, read-only, in the engine). */
export function trainerMountPath(trainer: Pick<ResolvedTrainer, "checkpointDir">): string {
  return posix.resolve("/reins", trainer.checkpointDir.replace(/\\/g, "/"));
}

/** Processes per pod: one per GPU on cuda, one on cpu. */
export function processesPerNode(trainer: Pick<ResolvedTrainer, "device" | "gpus">): number {
  return trainer.device === "cuda" ? Math.max(1, trainer.gpus) : 1;
}

/**
 * The engine's reload URL: the openai-compatible or sglang base URL without its `/v1`, plus the
 * reload path (SGLang's /update_weights_from_disk by default). vLLM reloads in several calls
 * (engines/vllm.ts), which one URL cannot express.
 */
export function engineReloadUrl(plan: Pick<Plan, "model">, reloadPath = "/update_weights_from_disk"): string | undefined {
  const engine = plan.model?.engine;
  if (!engine || (engine.type !== "openai-compatible" && engine.type !== "sglang")) return undefined;
  const root = engine.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
  return `${root}${reloadPath.startsWith("/") ? "" : "/"}${reloadPath}`;
}

interface Context {
  plan: Plan;
  trainer: ResolvedTrainer;
  runId: string;
  namespace: string;
  name: string;
  claimName: string;
  port: number;
  rdzvPort: number;
  mountPath: string;
  runDir: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  owner: { name: string; uid: string };
  reloadUrl?: string;
}

function metadataOf(c: Context, name: string): ObjectMeta {
  return {
    name,
    namespace: c.namespace,
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    ownerReferences: [ownerReference(c.owner)],
  };
}

/**
 * torchrun's argv: the launcher (its flags in the underscore spelling, which torch 1.x and 2.x both
 * accept; each rank's stdout teed to the pod's log, `--redirects=1 --tee=1`: the launcher of torch
 * 1.13, Debian's, cannot parse the default 0 on Python 3.11), then the worker module and its
 * flags. The worker waits for the initial policy, which
 * reins stages in the claim through rank 0's pod once it runs (k8s/cluster-worker.ts).
 */
export function torchrunArgs(c: Pick<Context, "plan" | "trainer" | "name" | "port" | "rdzvPort" | "runDir"> & { modelDir: string }): string[] {
  const { plan, trainer } = c;
  const args = [
    `--nnodes=${trainer.nodes}`,
    `--nproc_per_node=${processesPerNode(trainer)}`,
    "--node_rank=$(JOB_COMPLETION_INDEX)",
    "--rdzv_backend=static",
    `--rdzv_endpoint=${c.name}-0.${c.name}:${c.rdzvPort}`,
    "--max_restarts=0",
    "--redirects=1",
    "--tee=1",
    "-m",
    "trainers.torch.worker",
    "--host=0.0.0.0",
    `--port=${c.port}`,
    `--model-dir=${c.modelDir}`,
    `--out-dir=${c.runDir}`,
    `--device=${trainer.device}`,
    `--seed=${plan.seed}`,
    `--wait-for-model=${MODEL_WAIT_SECONDS}`,
  ];
  if (plan.algorithm) args.push(`--lr=${plan.algorithm.learningRate}`);
  if (plan.algorithm?.type === "PPO") args.push("--value-head");
  return args;
}

function buildClaim(c: Context, o: TrainerJobOptions): Manifest {
  const spec: Record<string, unknown> = {
    accessModes: ["ReadWriteMany"],
    resources: { requests: { storage: o.storage ?? "200Gi" } },
  };
  if (o.storageClassName) spec.storageClassName = o.storageClassName;
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: c.claimName,
      namespace: c.namespace,
      labels: {
        "app.kubernetes.io/name": "reins",
        "app.kubernetes.io/part-of": "reins",
        "app.kubernetes.io/managed-by": "reins",
        "app.kubernetes.io/component": "weights",
        "reins.dev/experiment": labelValue(c.plan.name),
      },
      annotations: { "reins.dev/experiment": c.plan.name },
    },
    spec,
  };
}

function buildService(c: Context): Manifest {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: metadataOf(c, c.name),
    spec: {
      clusterIP: "None",
      publishNotReadyAddresses: true,
      selector: { "reins.dev/run": c.labels["reins.dev/run"], "app.kubernetes.io/component": "trainer" },
      ports: [
        { name: "http", port: c.port, targetPort: c.port, protocol: "TCP" },
        { name: "rdzv", port: c.rdzvPort, targetPort: c.rdzvPort, protocol: "TCP" },
      ],
    },
  };
}

function buildJob(c: Context, o: TrainerJobOptions): Manifest {
  const { trainer } = c;
  const gpus = trainer.device === "cuda" ? trainer.gpus : 0;
  const modelDir = o.modelDir ?? posix.join(c.runDir, "model");
  const env: Record<string, unknown>[] = [
    { name: "JOB_COMPLETION_INDEX", valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${COMPLETION_INDEX_ANNOTATION}']` } } },
    { name: "PYTHONUNBUFFERED", value: "1" },
    { name: "REINS_RUN_ID", value: c.runId },
    { name: "REINS_WEIGHTS_ROOT", value: posix.join(c.runDir, "weights") },
  ];
  if (c.reloadUrl) env.push({ name: "REINS_ENGINE_RELOAD_URL", value: c.reloadUrl });
  const container: Record<string, unknown> = {
    name: TRAINER_CONTAINER,
    image: trainer.image ?? DEFAULT_TRAINER_IMAGE,
    imagePullPolicy: "IfNotPresent",
    workingDir: o.workDir ?? "/opt/reins",
    command: ["torchrun"],
    args: torchrunArgs({ ...c, modelDir }),
    env,
    ports: [
      { name: "http", containerPort: c.port, protocol: "TCP" },
      { name: "rdzv", containerPort: c.rdzvPort, protocol: "TCP" },
    ],
    volumeMounts: [
      { name: "weights", mountPath: c.mountPath },
      { name: "dshm", mountPath: "/dev/shm" },
    ],
  };
  if (gpus > 0) container.resources = { requests: { [GPU_RESOURCE]: String(gpus) }, limits: { [GPU_RESOURCE]: String(gpus) } };
  const podSpec: Record<string, unknown> = {
    subdomain: c.name,
    restartPolicy: "Never",
    enableServiceLinks: false,
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 30,
    containers: [container],
    volumes: [
      { name: "weights", persistentVolumeClaim: { claimName: c.claimName } },
      { name: "dshm", emptyDir: { medium: "Memory" } },
    ],
  };
  if (gpus > 0) podSpec.tolerations = [{ key: GPU_RESOURCE, operator: "Exists", effect: "NoSchedule" }];
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: metadataOf(c, c.name),
    spec: {
      completionMode: "Indexed",
      completions: trainer.nodes,
      parallelism: trainer.nodes,
      backoffLimit: o.backoffLimit ?? 3,
      ttlSecondsAfterFinished: o.ttlSecondsAfterFinished ?? 86400,
      podFailurePolicy: {
        rules: [
          { action: "Ignore", onPodConditions: [{ type: "DisruptionTarget", status: "True" }] },
          { action: "FailJob", onExitCodes: { containerName: TRAINER_CONTAINER, operator: "In", values: [1, 2] } },
        ],
      },
      template: { metadata: { labels: { ...c.labels }, annotations: { ...c.annotations } }, spec: podSpec },
    },
  };
}

/** The trainer's claim, headless Service and indexed Job; null when the trainer is not on Kubernetes. */
export function buildTrainerObjects(plan: Plan, o: TrainerJobOptions = {}): TrainerObjects | null {
  const trainer = plan.trainer;
  if (trainer?.mode !== "kubernetes") return null;
  const runId = o.runId ?? planRunId(plan);
  const namespace = o.namespace ?? plan.sandbox.kubernetes?.namespace ?? "default";
  const name = trainerJobName(runId);
  const port = o.port ?? 8000;
  const mountPath = trainerMountPath(trainer);
  const runDir = posix.join(mountPath, runId);
  const claimName = o.claimName ?? weightsClaimName(plan.name);
  const reloadUrl = engineReloadUrl(plan, o.reloadPath);
  const weightsRoot = posix.join(runDir, "weights");
  const annotations: Record<string, string> = {
    "reins.dev/run-id": runId,
    "reins.dev/plan-hash": plan.hash,
    "reins.dev/trainer-url": `http://${name}-0.${name}.${namespace}.svc:${port}`,
    "reins.dev/weights-claim": claimName,
    "reins.dev/weights-root": weightsRoot,
  };
  if (reloadUrl) {
    annotations["reins.dev/engine-reload"] = JSON.stringify({ method: "POST", url: reloadUrl, body: { model_path: `${weightsRoot}/<version>` } });
  }
  const c: Context = {
    plan,
    trainer,
    runId,
    namespace,
    name,
    claimName,
    port,
    rdzvPort: o.rendezvousPort ?? 29500,
    mountPath,
    runDir,
    labels: { ...runLabels(runId), "app.kubernetes.io/component": "trainer", "reins.dev/plan-hash": planHashLabel(plan.hash) },
    annotations,
    owner: { name: ownerName(runId), uid: o.ownerUid ?? OWNER_UID_PLACEHOLDER },
    ...(reloadUrl ? { reloadUrl } : {}),
  };
  return { claim: buildClaim(c, o), service: buildService(c), job: buildJob(c, o) };
}
