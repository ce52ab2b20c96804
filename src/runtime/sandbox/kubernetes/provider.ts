/**
 * The `kubernetes` provider: a Pod per rollout (or a SandboxClaim from an agent-sandbox warm
 * pool), exec over the API. Every object of a run carries `reins.dev/run` and an ownerReference to
 * the run's owner ConfigMap, so `cleanupRun` (deleting the owner) deletes the whole run. Pods
 * carry activeDeadlineSeconds, so a runner that dies cannot leave them running forever.
 */
import type { V1Pod } from "@kubernetes/client-node";
import { BaseSandboxProvider } from "../base-provider.js";
import { sleep } from "../host/process-tree.js";
import { baseEnvironment, DEFAULT_SANDBOX_IMAGE, SANDBOX_HOME, VERIFIER_GID, VERIFIER_UID } from "../layout.js";
import type { SandboxSpec } from "../provider.js";
import { SandboxError } from "../sandbox-error.js";
import { apiMessage, apiStatus, makeKubeClients, makeKubeConfig, type KubeClients, type KubeConnection } from "./client.js";
import {
  AGENT_SANDBOX,
  buildProxyOnlyNetworkPolicy,
  buildSandboxClaim,
  buildSandboxPod,
  buildSandboxTemplate,
  buildSandboxWarmPool,
  rolloutLabels,
  type RolloutIdentity,
} from "./manifests.js";
import { buildRunOwner, ownerName, type Manifest } from "./objects.js";
import { isPodReady, KubernetesSandbox } from "./sandbox.js";

export interface KubernetesProviderOptions {
  /** Explicit API server; default the kubeconfig or in-cluster config. */
  connection?: KubeConnection;
  namespace?: string;
  image?: string;
  runtimeClassName?: string;
  /** Take sandboxes from an agent-sandbox warm pool through SandboxClaims. */
  useSandboxClaims?: boolean;
  /** Warm pool replicas (with useSandboxClaims). */
  warmPool?: number;
  /** Life of a run's objects: owner expiry annotation and claim shutdown time. */
  ttlSeconds?: number;
  /** The proxy as seen from pods, when specs do not give one. */
  proxyUrl?: string;
  /** Create a NetworkPolicy per run allowing egress only to these proxy pods. */
  proxyPolicy?: { podLabels: Record<string, string>; port: number };
  readyTimeoutMs?: number;
  pollIntervalMs?: number;
}


interface RunObjects {
  owner: { name: string; uid: string };
}

export class KubernetesSandboxProvider extends BaseSandboxProvider {
  readonly type = "kubernetes" as const;
  readonly namespace: string;
  private clientsValue: KubeClients | null = null;
  private readonly runs = new Map<string, Promise<RunObjects>>();

  constructor(private readonly options: KubernetesProviderOptions = {}) {
    super();
    this.namespace = options.namespace ?? "default";
  }

  private get clients(): KubeClients {
    if (!this.clientsValue) this.clientsValue = makeKubeClients(makeKubeConfig(this.options.connection));
    return this.clientsValue;
  }

  private async createOrGet(create: () => Promise<unknown>, get: () => Promise<unknown>): Promise<unknown> {
    try {
      return await create();
    } catch (error) {
      if (apiStatus(error) === 409) return get();
      throw error;
    }
  }

  private async createCustom(plural: string, body: Manifest): Promise<void> {
    await this.createOrGet(
      () => this.clients.custom.createNamespacedCustomObject({ ...AGENT_SANDBOX, namespace: this.namespace, plural, body }),
      async () => undefined,
    );
  }

  /** The run's owner (and policy, template and warm pool), created once per run. */
  private ensureRun(runId: string, proxyUrl?: string): Promise<RunObjects> {
    let run = this.runs.get(runId);
    if (!run) {
      run = (async () => {
        const ns = this.namespace;
        const body = buildRunOwner({ runId, namespace: ns, ttlSeconds: this.options.ttlSeconds });
        const cm = (await this.createOrGet(
          () => this.clients.core.createNamespacedConfigMap({ namespace: ns, body }),
          () => this.clients.core.readNamespacedConfigMap({ name: body.metadata.name, namespace: ns }),
        )) as { metadata?: { name?: string; uid?: string } };
        const owner = { name: cm.metadata?.name ?? body.metadata.name, uid: cm.metadata?.uid ?? "" };
        if (!owner.uid) throw new Error(`the API server returned no uid for ConfigMap ${owner.name}`);
        // Every run's pods get a policy: egress to the proxy only (none when the run calls no model).
        const pp = this.options.proxyPolicy;
        const ip = proxyUrl ? ipv4Host(proxyUrl) : undefined;
        const to = pp ? { proxyPodLabels: pp.podLabels, proxyPort: pp.port } : ip ? { proxyIp: ip.host, proxyPort: ip.port } : {};
        const policy = buildProxyOnlyNetworkPolicy({ runId, namespace: ns, owner, ...to });
        await this.createOrGet(() => this.clients.networking.createNamespacedNetworkPolicy({ namespace: ns, body: policy }), async () => undefined);
        if (this.options.useSandboxClaims) {
          const pool = { runId, namespace: ns, image: this.options.image ?? DEFAULT_SANDBOX_IMAGE, replicas: this.options.warmPool ?? 1, runtimeClassName: this.options.runtimeClassName, owner };
          await this.createCustom("sandboxtemplates", buildSandboxTemplate(pool));
          await this.createCustom("sandboxwarmpools", buildSandboxWarmPool(pool));
        }
        return { owner };
      })();
      run.catch(() => this.runs.delete(runId));
      this.runs.set(runId, run);
    }
    return run;
  }

  protected async createSandbox(spec: SandboxSpec): Promise<KubernetesSandbox> {
    const identity: RolloutIdentity = { runId: spec.runId, rolloutId: spec.id, task: spec.task, harness: spec.harness };
    const ns = this.namespace;
    let owner: { name: string; uid: string };
    try {
      owner = (await this.ensureRun(spec.runId, spec.proxyUrl ?? this.options.proxyUrl)).owner;
    } catch (error) {
      throw new SandboxError("create-failed", spec.id, `cannot create the run's objects: ${apiMessage(error)}`, "check the cluster connection, the namespace and RBAC (configmaps, pods, pods/exec)", { cause: error });
    }
    const env = { ...baseEnvironment(SANDBOX_HOME), ...(spec.env ?? {}) };
    const configuredProxy = spec.proxyUrl ?? this.options.proxyUrl;
    const proxyUrl = (spec.network ?? (configuredProxy ? "proxy-only" : "none")) === "proxy-only" ? configuredProxy : undefined;
    let podName: string;
    let claimName: string | undefined;
    try {
      if (this.options.useSandboxClaims) {
        const claim = buildSandboxClaim({ identity, namespace: ns, ttlSeconds: spec.timeoutSeconds ?? this.options.ttlSeconds, owner });
        claimName = claim.metadata.name;
        await this.clients.custom.createNamespacedCustomObject({ ...AGENT_SANDBOX, namespace: ns, plural: "sandboxclaims", body: claim });
        podName = await this.waitForClaimedPod(identity, spec.id);
      } else {
        const pod = buildSandboxPod({
          identity,
          namespace: ns,
          image: spec.image ?? this.options.image ?? DEFAULT_SANDBOX_IMAGE,
          resources: spec.resources,
          deadlineSeconds: spec.timeoutSeconds,
          owner,
          runtimeClassName: this.options.runtimeClassName,
          env,
          labels: spec.labels,
          // A verifier's pod never runs as the agents' user.
          ...(spec.role === "verifier" ? { runAsUser: VERIFIER_UID, runAsGroup: VERIFIER_GID } : {}),
        });
        podName = pod.metadata.name;
        await this.createPod(pod, spec.id);
        await this.waitForPodReady(podName, spec.id);
      }
    } catch (error) {
      await this.deleteQuietly(podName!, claimName);
      if (error instanceof SandboxError) throw error;
      throw new SandboxError("create-failed", spec.id, `cannot create the sandbox pod: ${apiMessage(error)}`, "check the image, the namespace's quota and RBAC", { cause: error });
    }
    return new KubernetesSandbox({ id: spec.id, clients: this.clients, namespace: ns, podName, claimName, env, proxyUrl });
  }

  /**
   * A pod of this name exists only when a runner of this run died with the rollout's sandbox up
   * (names are the run's, the rollout's and the try's): that pod is stale, so it is deleted and
   * the pod created again.
   */
  private async createPod(pod: Manifest, id: string): Promise<void> {
    const namespace = this.namespace;
    const name = pod.metadata.name;
    try {
      await this.clients.core.createNamespacedPod({ namespace, body: pod as unknown as V1Pod });
      return;
    } catch (error) {
      if (apiStatus(error) !== 409) throw error;
    }
    await this.clients.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }).catch(() => undefined);
    await this.poll(id, `stale pod ${name} to go`, async () => {
      try {
        await this.clients.core.readNamespacedPod({ name, namespace });
        return null;
      } catch (error) {
        if (apiStatus(error) === 404) return true;
        throw error;
      }
    });
    await this.clients.core.createNamespacedPod({ namespace, body: pod as unknown as V1Pod });
  }

  private async deleteQuietly(podName: string | undefined, claimName: string | undefined): Promise<void> {
    if (claimName) {
      await this.clients.custom
        .deleteNamespacedCustomObject({ ...AGENT_SANDBOX, namespace: this.namespace, plural: "sandboxclaims", name: claimName })
        .catch(() => undefined);
    }
    if (podName) await this.clients.core.deleteNamespacedPod({ name: podName, namespace: this.namespace, gracePeriodSeconds: 0 }).catch(() => undefined);
  }

  private async poll<T>(id: string, what: string, step: () => Promise<T | null>): Promise<T> {
    const deadline = Date.now() + (this.options.readyTimeoutMs ?? 300_000);
    for (;;) {
      const value = await step();
      if (value !== null) return value;
      if (Date.now() > deadline) throw new SandboxError("timeout", id, `${what} not ready after ${this.options.readyTimeoutMs ?? 300_000} ms`, "the cluster may lack capacity or the image may not pull");
      await sleep(this.options.pollIntervalMs ?? 500);
    }
  }

  private waitForPodReady(name: string, id: string): Promise<V1Pod> {
    return this.poll(id, `pod ${name}`, async () => {
      const pod = await this.clients.core.readNamespacedPod({ name, namespace: this.namespace });
      const phase = pod.status?.phase;
      if (phase === "Failed" || phase === "Succeeded") {
        const why = [pod.status?.reason, pod.status?.message].filter(Boolean).join(": ");
        throw new SandboxError("create-failed", id, `pod ${name} ended (${phase}) before it was ready${why ? `: ${why}` : ""}`);
      }
      return isPodReady(pod) ? pod : null;
    });
  }

  /** The warm pod a claim adopted carries the rollout's labels (additionalPodMetadata). */
  private waitForClaimedPod(identity: RolloutIdentity, id: string): Promise<string> {
    const labels = rolloutLabels(identity);
    const selector = ["reins.dev/run", "reins.dev/rollout"].map((k) => `${k}=${labels[k]}`).join(",");
    return this.poll(id, `claimed sandbox for ${identity.rolloutId}`, async () => {
      const list = await this.clients.core.listNamespacedPod({ namespace: this.namespace, labelSelector: selector });
      const ready = list.items.find(isPodReady);
      return ready?.metadata?.name ?? null;
    });
  }

  /**
   * Closing ends the provider's runs: its sandboxes are destroyed, then each run's owner is
   * deleted, and the garbage collector removes whatever still hangs from it (a policy, a warm pool,
   * pods of a runner killed before — a resumed run adopts the same owner).
   */
  override async close(): Promise<void> {
    await super.close();
    const runs = [...this.runs.keys()];
    await Promise.all(runs.map((runId) => this.cleanupRun(runId).catch(() => undefined)));
  }

  async cleanupRun(runId: string): Promise<void> {
    this.runs.delete(runId);
    try {
      await this.clients.core.deleteNamespacedConfigMap({ name: ownerName(runId), namespace: this.namespace, propagationPolicy: "Background" });
    } catch (error) {
      if (apiStatus(error) !== 404) throw error;
    }
  }
}

/** The host and port of an http URL whose host is an IPv4 address. */
function ipv4Host(url: string): { host: string; port: number } | undefined {
  try {
    const u = new URL(url);
    if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(u.hostname)) return undefined;
    return { host: u.hostname, port: Number(u.port || (u.protocol === "https:" ? 443 : 80)) };
  } catch {
    return undefined;
  }
}
