/**
 * Pure builders of the Kubernetes objects the kubernetes provider creates (and the podman provider
 * plays): a run-scoped owner ConfigMap, a Pod per rollout, a proxy-only NetworkPolicy, and the
 * agent-sandbox objects (SandboxTemplate, SandboxWarmPool, SandboxClaim) for warm pools.
 * Everything a run creates carries `reins.dev/run` and an ownerReference to the run's owner, so
 * deleting the owner deletes the run.
 */
import { dnsName, labelValue } from "./names.js";

export type Manifest = Record<string, unknown> & { apiVersion: string; kind: string; metadata: ObjectMeta };

export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  blockOwnerDeletion?: boolean;
  controller?: boolean;
}

export interface RolloutIdentity {
  runId: string;
  rolloutId: string;
  task?: string;
  harness?: string;
}

export const AGENT_SANDBOX_API = "extensions.agents.x-k8s.io/v1beta1";
export const SANDBOX_CONTAINER = "sandbox";
export const WORKSPACE_PATH = "/workspace";
export const HOME_PATH = "/home/sandbox";
export const SANDBOX_USER = 1000;
/** Keeps the container alive and exits at once on SIGTERM (busybox sh or any POSIX sh). */
export const KEEPER_COMMAND = ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"];

export function runLabels(runId: string): Record<string, string> {
  return {
    "app.kubernetes.io/name": "reins",
    "app.kubernetes.io/part-of": "reins",
    "app.kubernetes.io/managed-by": "reins",
    "app.kubernetes.io/instance": labelValue(runId),
    "reins.dev/run": labelValue(runId),
  };
}

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

export function ownerName(runId: string): string {
  return dnsName(["reins-run", runId]);
}

export function podName(id: RolloutIdentity): string {
  return dnsName(["reins", id.runId, id.rolloutId]);
}

/** The run's owner object: a ConfigMap every other object of the run points to. */
export function buildRunOwner(o: { runId: string; namespace: string; ttlSeconds?: number; now?: Date }): Manifest {
  const annotations: Record<string, string> = { "reins.dev/run-id": o.runId };
  if (o.ttlSeconds !== undefined) {
    const now = o.now ?? new Date();
    annotations["reins.dev/expires-at"] = new Date(now.getTime() + o.ttlSeconds * 1000).toISOString();
  }
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: ownerName(o.runId), namespace: o.namespace, labels: { ...runLabels(o.runId), "app.kubernetes.io/component": "run" }, annotations },
    data: { runId: o.runId },
  };
}

export function ownerReference(owner: { name: string; uid: string }): OwnerReference {
  return { apiVersion: "v1", kind: "ConfigMap", name: owner.name, uid: owner.uid, blockOwnerDeletion: false, controller: false };
}

export interface PodOptions {
  identity: RolloutIdentity;
  namespace: string;
  image: string;
  resources?: { cpu: string; memoryMiB: number };
  /** Pod lifetime bound (activeDeadlineSeconds). */
  deadlineSeconds?: number;
  owner?: { name: string; uid: string };
  runtimeClassName?: string;
  env?: Record<string, string>;
  labels?: Record<string, string>;
}

function envList(env: Record<string, string>): { name: string; value: string }[] {
  return Object.entries(env)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => ({ name, value }));
}

/** The pod spec of a sandbox: one keeper container, read-only root, writable workspace/HOME//tmp. */
export function buildSandboxPodSpec(o: Omit<PodOptions, "identity" | "namespace" | "owner" | "labels">): Record<string, unknown> {
  const resources = o.resources
    ? {
        requests: { cpu: o.resources.cpu, memory: `${o.resources.memoryMiB}Mi` },
        limits: { cpu: o.resources.cpu, memory: `${o.resources.memoryMiB}Mi` },
      }
    : undefined;
  const container: Record<string, unknown> = {
    name: SANDBOX_CONTAINER,
    image: o.image,
    imagePullPolicy: "IfNotPresent",
    command: KEEPER_COMMAND,
    workingDir: WORKSPACE_PATH,
    env: envList({ HOME: HOME_PATH, TMPDIR: "/tmp", ...(o.env ?? {}) }),
    securityContext: {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: SANDBOX_USER,
      runAsGroup: SANDBOX_USER,
    },
    volumeMounts: [
      { name: "workspace", mountPath: WORKSPACE_PATH },
      { name: "home", mountPath: HOME_PATH },
      { name: "tmp", mountPath: "/tmp" },
    ],
  };
  if (resources) container.resources = resources;
  const spec: Record<string, unknown> = {
    restartPolicy: "Never",
    terminationGracePeriodSeconds: 0,
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    securityContext: { runAsNonRoot: true, runAsUser: SANDBOX_USER, runAsGroup: SANDBOX_USER, fsGroup: SANDBOX_USER },
    containers: [container],
    volumes: [
      { name: "workspace", emptyDir: {} },
      { name: "home", emptyDir: {} },
      { name: "tmp", emptyDir: {} },
    ],
  };
  if (o.deadlineSeconds !== undefined) spec.activeDeadlineSeconds = Math.max(1, Math.ceil(o.deadlineSeconds));
  if (o.runtimeClassName) spec.runtimeClassName = o.runtimeClassName;
  return spec;
}

export function buildSandboxPod(o: PodOptions): Manifest {
  const metadata: ObjectMeta = {
    name: podName(o.identity),
    namespace: o.namespace,
    labels: rolloutLabels(o.identity, o.labels),
    annotations: { "reins.dev/rollout-id": o.identity.rolloutId, "reins.dev/run-id": o.identity.runId },
  };
  if (o.owner) metadata.ownerReferences = [ownerReference(o.owner)];
  return { apiVersion: "v1", kind: "Pod", metadata, spec: buildSandboxPodSpec(o) };
}

export interface ProxyPolicyOptions {
  runId: string;
  namespace: string;
  /** Labels of the proxy's pods and its port. */
  proxyPodLabels: Record<string, string>;
  proxyPort: number;
  owner?: { name: string; uid: string };
  /** Allow DNS to kube-dns (needed when the proxy URL is a Service name). Default true. */
  allowDns?: boolean;
}

/** Sandboxes of the run may talk to the proxy (and DNS) and nothing else; nothing may reach them. */
export function buildProxyOnlyNetworkPolicy(o: ProxyPolicyOptions): Manifest {
  const egress: Record<string, unknown>[] = [
    { to: [{ podSelector: { matchLabels: o.proxyPodLabels } }], ports: [{ protocol: "TCP", port: o.proxyPort }] },
  ];
  if (o.allowDns !== false) {
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
  const metadata: ObjectMeta = { name: dnsName(["reins-proxy-only", o.runId]), namespace: o.namespace, labels: runLabels(o.runId) };
  if (o.owner) metadata.ownerReferences = [ownerReference(o.owner)];
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

export interface WarmPoolOptions {
  runId: string;
  namespace: string;
  image: string;
  replicas: number;
  resources?: { cpu: string; memoryMiB: number };
  runtimeClassName?: string;
  owner?: { name: string; uid: string };
}

export function templateName(runId: string): string {
  return dnsName(["reins-template", runId]);
}

export function warmPoolName(runId: string): string {
  return dnsName(["reins-pool", runId]);
}

/** agent-sandbox SandboxTemplate holding the same pod spec as a plain sandbox Pod. */
export function buildSandboxTemplate(o: WarmPoolOptions): Manifest {
  const metadata: ObjectMeta = { name: templateName(o.runId), namespace: o.namespace, labels: runLabels(o.runId) };
  if (o.owner) metadata.ownerReferences = [ownerReference(o.owner)];
  return {
    apiVersion: AGENT_SANDBOX_API,
    kind: "SandboxTemplate",
    metadata,
    spec: {
      podTemplate: {
        metadata: { labels: { ...runLabels(o.runId), "app.kubernetes.io/component": "sandbox" } },
        spec: buildSandboxPodSpec({ image: o.image, resources: o.resources, runtimeClassName: o.runtimeClassName }),
      },
      networkPolicyManagement: "Unmanaged",
    },
  };
}

export function buildSandboxWarmPool(o: WarmPoolOptions): Manifest {
  const metadata: ObjectMeta = { name: warmPoolName(o.runId), namespace: o.namespace, labels: runLabels(o.runId) };
  if (o.owner) metadata.ownerReferences = [ownerReference(o.owner)];
  return {
    apiVersion: AGENT_SANDBOX_API,
    kind: "SandboxWarmPool",
    metadata,
    spec: { replicas: o.replicas, sandboxTemplateRef: { name: templateName(o.runId) } },
  };
}

export interface ClaimOptions {
  identity: RolloutIdentity;
  namespace: string;
  /** Seconds from `now` after which the claim (and its sandbox) shut down. */
  ttlSeconds?: number;
  now?: Date;
  owner?: { name: string; uid: string };
}

export function claimName(id: RolloutIdentity): string {
  return dnsName(["reins-claim", id.runId, id.rolloutId]);
}

/** A SandboxClaim taking one warm sandbox from the run's pool; the pod gets the rollout's labels. */
export function buildSandboxClaim(o: ClaimOptions): Manifest {
  const labels = rolloutLabels(o.identity);
  const metadata: ObjectMeta = { name: claimName(o.identity), namespace: o.namespace, labels };
  if (o.owner) metadata.ownerReferences = [ownerReference(o.owner)];
  const spec: Record<string, unknown> = {
    warmPoolRef: { name: warmPoolName(o.identity.runId) },
    additionalPodMetadata: { labels },
  };
  if (o.ttlSeconds !== undefined) {
    const now = o.now ?? new Date();
    spec.lifecycle = {
      shutdownTime: new Date(now.getTime() + o.ttlSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z"),
      shutdownPolicy: "Delete",
    };
  }
  return { apiVersion: AGENT_SANDBOX_API, kind: "SandboxClaim", metadata, spec };
}
