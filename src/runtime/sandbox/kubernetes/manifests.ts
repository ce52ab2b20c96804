/**
 * Pure builders of the Kubernetes objects the kubernetes provider creates for sandboxes (and the
 * podman provider plays): a Pod per rollout, a proxy-only NetworkPolicy, and the agent-sandbox
 * objects (SandboxTemplate, SandboxWarmPool, SandboxClaim) for warm pools. Each carries
 * `reins.dev/run` and an ownerReference to the run's owner (objects.ts).
 */
import { SANDBOX_CONTAINER, SANDBOX_GID, SANDBOX_HOME, SANDBOX_TMP, SANDBOX_UID, SANDBOX_WORKSPACE } from "../layout.js";
import { shutdownTime } from "./lifetime.js";
import { dnsName, labelValue, shortHash } from "./names.js";
import { ownedMetadata, runLabels, type Manifest } from "./objects.js";

export interface RolloutIdentity {
  runId: string;
  rolloutId: string;
  task?: string;
  harness?: string;
}

/** kubernetes-sigs/agent-sandbox's extensions API, as a group and version (custom object calls) and as apiVersion. */
export const AGENT_SANDBOX = { group: "extensions.agents.x-k8s.io", version: "v1beta1" } as const;
export const AGENT_SANDBOX_API = `${AGENT_SANDBOX.group}/${AGENT_SANDBOX.version}`;
/** Keeps the container alive and exits at once on SIGTERM (busybox sh or any POSIX sh). */
export const KEEPER_COMMAND = ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"];

export function rolloutLabels(id: RolloutIdentity, extra: Record<string, string> = {}): Record<string, string> {
  const labels: Record<string, string> = {
    ...runLabels(id.runId),
    "app.kubernetes.io/component": "sandbox",
    "reins.dev/rollout": labelValue(id.rolloutId),
  };
  if (id.task) labels["reins.dev/task"] = labelValue(id.task);
  if (id.harness) labels["reins.dev/harness"] = labelValue(id.harness);
  for (const [k, v] of Object.entries(extra)) labels[k] = labelValue(v);
  return labels;
}

export function podName(id: RolloutIdentity): string {
  return dnsName(["reins", id.runId, id.rolloutId]);
}

/**
 * A sandbox's limits as a Pod can state them: cpu and memory, and diskMiB as ephemeral-storage and
 * each emptyDir's sizeLimit. pids, openFiles and cpuSeconds have no Pod field: the kubelet's
 * podPidsLimit and the container runtime's defaults apply (documented in the Sandbox schema).
 */
export interface PodResources {
  cpu: string;
  memoryMiB: number;
  diskMiB?: number;
}

/** What every object holding a sandbox pod spec is built from. */
interface SandboxPodBase {
  namespace: string;
  image: string;
  resources?: PodResources;
  runtimeClassName?: string;
  owner?: { name: string; uid: string };
}

export interface PodOptions extends SandboxPodBase {
  identity: RolloutIdentity;
  /** Pod lifetime bound (activeDeadlineSeconds). */
  deadlineSeconds?: number;
  env?: Record<string, string>;
  labels?: Record<string, string>;
  /** The user commands run as; default the sandbox user (a verifier's pod runs as another). */
  runAsUser?: number;
  runAsGroup?: number;
}

function envList(env: Record<string, string>): { name: string; value: string }[] {
  return Object.entries(env)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => ({ name, value }));
}

/** The pod spec of a sandbox: one keeper container, read-only root, writable workspace/HOME//tmp. */
export function buildSandboxPodSpec(o: Omit<PodOptions, "identity" | "namespace" | "owner" | "labels">): Record<string, unknown> {
  const disk = o.resources?.diskMiB;
  const amounts = o.resources
    ? { cpu: o.resources.cpu, memory: `${o.resources.memoryMiB}Mi`, ...(disk ? { "ephemeral-storage": `${disk * 3}Mi` } : {}) }
    : undefined;
  const resources = amounts ? { requests: { ...amounts }, limits: { ...amounts } } : undefined;
  const emptyDir = disk ? { sizeLimit: `${disk}Mi` } : {};
  const container: Record<string, unknown> = {
    name: SANDBOX_CONTAINER,
    image: o.image,
    imagePullPolicy: "IfNotPresent",
    command: KEEPER_COMMAND,
    workingDir: SANDBOX_WORKSPACE,
    env: envList({ HOME: SANDBOX_HOME, TMPDIR: SANDBOX_TMP, ...(o.env ?? {}) }),
    securityContext: {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: o.runAsUser ?? SANDBOX_UID,
      runAsGroup: o.runAsGroup ?? SANDBOX_GID,
    },
    volumeMounts: [
      { name: "workspace", mountPath: SANDBOX_WORKSPACE },
      { name: "home", mountPath: SANDBOX_HOME },
      { name: "tmp", mountPath: SANDBOX_TMP },
    ],
  };
  if (resources) container.resources = resources;
  const spec: Record<string, unknown> = {
    restartPolicy: "Never",
    terminationGracePeriodSeconds: 0,
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: o.runAsUser ?? SANDBOX_UID,
      runAsGroup: o.runAsGroup ?? SANDBOX_GID,
      fsGroup: o.runAsGroup ?? SANDBOX_GID,
    },
    containers: [container],
    volumes: [
      { name: "workspace", emptyDir: { ...emptyDir } },
      { name: "home", emptyDir: { ...emptyDir } },
      { name: "tmp", emptyDir: { ...emptyDir } },
    ],
  };
  if (o.deadlineSeconds !== undefined) spec.activeDeadlineSeconds = Math.max(1, Math.ceil(o.deadlineSeconds));
  if (o.runtimeClassName) spec.runtimeClassName = o.runtimeClassName;
  return spec;
}

export function buildSandboxPod(o: PodOptions): Manifest {
  const metadata = ownedMetadata(
    {
      name: podName(o.identity),
      namespace: o.namespace,
      labels: rolloutLabels(o.identity, o.labels),
      annotations: { "reins.dev/rollout-id": o.identity.rolloutId, "reins.dev/run-id": o.identity.runId },
    },
    o.owner,
  );
  return { apiVersion: "v1", kind: "Pod", metadata, spec: buildSandboxPodSpec(o) };
}

export interface ProxyPolicyOptions {
  runId: string;
  namespace: string;
  /** The proxy: its pods' labels (reins in the cluster) or an address of the machine it runs on, and its port; none: no egress at all. */
  proxyPodLabels?: Record<string, string>;
  proxyIp?: string;
  proxyPort?: number;
  owner?: { name: string; uid: string };
  /** Allow DNS to kube-dns (needed when the proxy URL is a Service name). Default: with proxyPodLabels. */
  allowDns?: boolean;
}

/** The run's sandbox pods may reach the proxy and nothing else (no ingress; egress to the proxy, and DNS to find its Service). */
export function buildProxyOnlyNetworkPolicy(o: ProxyPolicyOptions): Manifest {
  const egress: Record<string, unknown>[] = [];
  const ports = o.proxyPort !== undefined ? [{ protocol: "TCP", port: o.proxyPort }] : [];
  if (o.proxyPodLabels) egress.push({ to: [{ podSelector: { matchLabels: o.proxyPodLabels } }], ports });
  else if (o.proxyIp) egress.push({ to: [{ ipBlock: { cidr: `${o.proxyIp}/32` } }], ports });
  if (o.allowDns ?? o.proxyPodLabels !== undefined) {
    egress.push({
      to: [
        {
          namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
          podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
        },
      ],
      ports: [
        { protocol: "UDP", port: 53 },
        { protocol: "TCP", port: 53 },
      ],
    });
  }
  const metadata = ownedMetadata({ name: dnsName(["reins-proxy-only", o.runId]), namespace: o.namespace, labels: runLabels(o.runId) }, o.owner);
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata,
    spec: {
      podSelector: { matchLabels: { "reins.dev/run": labelValue(o.runId), "app.kubernetes.io/component": "sandbox" } },
      policyTypes: ["Ingress", "Egress"],
      ingress: [],
      egress,
    },
  };
}

export interface WarmPoolOptions extends SandboxPodBase {
  runId: string;
  replicas: number;
  /** The user the pool's pods run commands as (a verifier's pool runs as another than agents'). */
  runAsUser?: number;
  runAsGroup?: number;
}

/**
 * What tells a run's warm pools apart: the pod spec they keep warm (image, resources, user, runtime
 * class), as a short hash in their names, so rollouts of different harness images or a verifier's
 * user never share a pool.
 */
export function poolKey(o: Omit<WarmPoolOptions, "runId" | "replicas" | "namespace" | "owner">): string {
  return shortHash(JSON.stringify(warmPodSpec(o)), 8);
}

function warmPodSpec(o: Omit<WarmPoolOptions, "runId" | "replicas" | "namespace" | "owner">): Record<string, unknown> {
  return buildSandboxPodSpec({
    image: o.image,
    resources: o.resources,
    runtimeClassName: o.runtimeClassName,
    runAsUser: o.runAsUser,
    runAsGroup: o.runAsGroup,
  });
}

export function templateName(o: WarmPoolOptions): string {
  return dnsName(["reins-template", o.runId, poolKey(o)]);
}

export function warmPoolName(o: WarmPoolOptions): string {
  return dnsName(["reins-pool", o.runId, poolKey(o)]);
}

/** An agent-sandbox object of the run's warm pool. */
function poolObject(kind: string, name: string, o: WarmPoolOptions, spec: Record<string, unknown>): Manifest {
  return { apiVersion: AGENT_SANDBOX_API, kind, metadata: ownedMetadata({ name, namespace: o.namespace, labels: runLabels(o.runId) }, o.owner), spec };
}

/**
 * agent-sandbox SandboxTemplate holding the same pod spec as a plain sandbox Pod, with no
 * rollout's env or identity in it (those are bound after a claim, so its pods can be kept warm).
 */
export function buildSandboxTemplate(o: WarmPoolOptions): Manifest {
  return poolObject("SandboxTemplate", templateName(o), o, {
    podTemplate: {
      metadata: { labels: { ...runLabels(o.runId), "app.kubernetes.io/component": "sandbox" } },
      spec: warmPodSpec(o),
    },
    networkPolicyManagement: "Unmanaged",
  });
}

export function buildSandboxWarmPool(o: WarmPoolOptions): Manifest {
  return poolObject("SandboxWarmPool", warmPoolName(o), o, { replicas: o.replicas, sandboxTemplateRef: { name: templateName(o) } });
}

export interface ClaimOptions {
  identity: RolloutIdentity;
  namespace: string;
  /** Seconds from `now` after which the claim (and its sandbox) shut down (lifetime.ts). */
  ttlSeconds?: number;
  now?: Date;
  owner?: { name: string; uid: string };
  /** The warm pool's name (warmPoolName). */
  warmPool: string;
}

export function claimName(id: RolloutIdentity): string {
  return dnsName(["reins-claim", id.runId, id.rolloutId]);
}

/**
 * A SandboxClaim taking one sandbox from a warm pool of the run. It carries no env and no pod
 * metadata — either would force a cold start — only labels of its own (for cleanup and for the
 * run's watch); the rollout's identity reaches the pod after the claim (provider.ts).
 */
export function buildSandboxClaim(o: ClaimOptions): Manifest {
  const labels = rolloutLabels(o.identity);
  const metadata = ownedMetadata({ name: claimName(o.identity), namespace: o.namespace, labels }, o.owner);
  const spec: Record<string, unknown> = { warmPoolRef: { name: o.warmPool } };
  if (o.ttlSeconds !== undefined) spec.lifecycle = { shutdownTime: shutdownTime(o.now ?? new Date(), o.ttlSeconds), shutdownPolicy: "Delete" };
  return { apiVersion: AGENT_SANDBOX_API, kind: "SandboxClaim", metadata, spec };
}

/** The rollout's identity as the claimed pod gets it: labels and annotations (a merge patch's body). */
export function identityPatch(
  id: RolloutIdentity,
  extra: Record<string, string> = {},
): { metadata: { labels: Record<string, string>; annotations: Record<string, string> } } {
  return { metadata: { labels: rolloutLabels(id, extra), annotations: { "reins.dev/rollout-id": id.rolloutId, "reins.dev/run-id": id.runId } } };
}
