/**
 * The trainer's objects on the cluster for `reins run` (trainer.mode: kubernetes): the run's owner,
 * the weights claim, the headless Service and the indexed Job (trainer-job.ts builds them), then a
 * wait for rank 0's pod to have an address. `close` deletes the owner, so the garbage collector
 * removes the Job, its pods and the Service; the claim belongs to the experiment and is kept for a
 * resume unless the run finished. Effects only; the objects are the pure builders'.
 *
 * Ports: the Job created here listens on two ports free on this machine when it was created, not
 * the builder's defaults (8000, 29500): any port works in a pod of its own network, and on a node
 * whose pods share the host's network (the test cluster) two runs then never clash. A resumed run
 * reuses the Job it finds, with its ports. Address: rank 0's pod IP, or where such a node says the
 * pod's ports are (annotation sim.reins.dev/address; the test cluster's pod IPs route nowhere).
 */
import { createServer } from "node:net";
import { posix } from "node:path";
import type { V1Job, V1PersistentVolumeClaim, V1Pod, V1Service } from "@kubernetes/client-node";
import type { Plan } from "../../compiler/contract/plan.js";
import { ReinsError } from "../../compiler/contract/problem.js";
import { apiMessage, apiStatus, makeKubeClients, makeKubeConfig, type KubeClients } from "../sandbox/kubernetes/client.js";
import { buildRunOwner, ownerName } from "../sandbox/kubernetes/objects.js";
import { buildTrainerObjects, planRunId, trainerMountPath } from "./trainer-job.js";

export interface ClusterTrainer {
  /** The Job's name and rank 0's pod and address. */
  job: string;
  /** Rank 0's pod, its IP, and the URL of its trainer-protocol port. */
  rank0: { pod: string; ip: string; url: string };
  /** The run's directory in the claim as the pods mount it. */
  runDir: string;
  clients: KubeClients;
  namespace: string;
  /** Deletes the run's objects; the claim too when `finished`. */
  close(finished: boolean): Promise<void>;
}

export async function startClusterTrainer(
  plan: Plan,
  o: { log?: (line: string) => void; clients?: KubeClients; readyTimeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ClusterTrainer> {
  const clients = o.clients ?? makeKubeClients(makeKubeConfig());
  const runId = planRunId(plan);
  const namespace = plan.sandbox.kubernetes?.namespace ?? "default";
  const fail = (what: string, error: unknown): never => {
    throw new ReinsError("TrainerJobFailed", `The trainer's ${what} on the cluster: ${apiMessage(error)}.`, undefined, { cause: error });
  };
  const ownerBody = buildRunOwner({ runId, namespace, ttlSeconds: plan.sandbox.kubernetes?.ttlSeconds });
  let ownerUid = "";
  try {
    const created = await createOrRead(
      () => clients.core.createNamespacedConfigMap({ namespace, body: ownerBody as never }),
      () => clients.core.readNamespacedConfigMap({ name: ownerBody.metadata.name, namespace }),
    );
    ownerUid = created.value.metadata?.uid ?? "";
  } catch (e) {
    fail("run owner could not be created", e);
  }
  const objects = buildTrainerObjects(plan, { runId, namespace, ownerUid, port: await freePort(), rendezvousPort: await freePort() })!;
  let port = 0;
  const claimName = objects.claim.metadata.name;
  try {
    const claim = await createOrRead(
      () => clients.core.createNamespacedPersistentVolumeClaim({ namespace, body: objects.claim as unknown as V1PersistentVolumeClaim }),
      () => clients.core.readNamespacedPersistentVolumeClaim({ name: claimName, namespace }),
    );
    o.log?.(`trainer: weights claim ${claimName} (${claim.created ? "created" : "found: an earlier run of this experiment left it"})`);
    await createOrRead(
      () => clients.core.createNamespacedService({ namespace, body: objects.service as unknown as V1Service }),
      () => clients.core.readNamespacedService({ name: objects.service.metadata.name, namespace }),
    );
    const job = await createOrRead(
      () => clients.batch.createNamespacedJob({ namespace, body: objects.job as unknown as V1Job }),
      () => clients.batch.readNamespacedJob({ name: objects.job.metadata.name, namespace }),
    );
    // The Job found on a resume keeps the ports it was created with.
    const arg = job.value.spec?.template.spec?.containers[0]?.args?.find((a) => a.startsWith("--port="));
    port = Number(arg?.slice("--port=".length) ?? 0);
  } catch (e) {
    fail("claim, Service or Job could not be created", e);
  }
  const job = objects.job.metadata.name;
  const close = async (finished: boolean) => {
    await clients.core.deleteNamespacedConfigMap({ name: ownerName(runId), namespace, propagationPolicy: "Background" }).catch(ignoreMissing);
    if (finished) await clients.core.deleteNamespacedPersistentVolumeClaim({ name: claimName, namespace }).catch(ignoreMissing);
  };
  try {
    const pod = await waitForRank0(clients, namespace, job, o.readyTimeoutMs ?? 300_000, o.signal);
    const url = `http://${pod.address}:${port}`;
    o.log?.(`trainer: Job ${job}, rank 0 is pod ${pod.pod} at ${pod.ip}${pod.address !== pod.ip ? ` (its ports on ${pod.address}, the node's network)` : ""}`);
    const runDir = posix.join(trainerMountPath(plan.trainer!), runId);
    return { job, rank0: { pod: pod.pod, ip: pod.ip, url }, runDir, clients, namespace, close };
  } catch (e) {
    await close(false);
    throw e;
  }
}

/** Rank 0 lives in the pod of completion index 0 (trainer-job.ts); its address once it has one. */
async function waitForRank0(
  clients: KubeClients,
  namespace: string,
  job: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ pod: string; ip: string; address: string }> {
  const deadline = Date.now() + timeoutMs;
  let last = "no pod yet";
  while (Date.now() < deadline && !signal?.aborted) {
    const pods = await clients.core.listNamespacedPod({ namespace, labelSelector: `job-name=${job}` });
    const pod = pods.items.find((p: V1Pod) => p.metadata?.annotations?.["batch.kubernetes.io/job-completion-index"] === "0");
    if (pod?.status?.podIP)
      return { pod: pod.metadata!.name!, ip: pod.status.podIP, address: pod.metadata?.annotations?.["sim.reins.dev/address"] ?? pod.status.podIP };
    if (pod)
      last = `pod ${pod.metadata?.name} is ${pod.status?.phase ?? "pending"}${pod.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False")?.message ? `: ${pod.status.conditions.find((c) => c.type === "PodScheduled")!.message}` : ""}`;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new ReinsError("TrainerJobFailed", `The trainer Job ${job}'s rank 0 had no address after ${Math.round(timeoutMs / 1000)} s (${last}).`);
}

/** A TCP port free on this machine now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Creates the object, or reads the one already there (`created` says which). */
async function createOrRead<T>(create: () => Promise<T>, read: () => Promise<T>): Promise<{ value: T; created: boolean }> {
  try {
    return { value: await create(), created: true };
  } catch (e) {
    if (apiStatus(e) === 409) return { value: await read(), created: false };
    throw e;
  }
}

function ignoreMissing(e: unknown): void {
  if (apiStatus(e) !== 404) throw e;
}
