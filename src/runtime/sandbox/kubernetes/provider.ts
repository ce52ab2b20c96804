/**
 * The `kubernetes` provider: a Pod per rollout, or a SandboxClaim on an agent-sandbox warm pool
 * (`useSandboxClaims`), exec over the API. Every object of a run carries `reins.dev/run` and an
 * ownerReference to the run's owner ConfigMap, so `cleanupRun` (deleting the owner) deletes the
 * whole run. Pods carry activeDeadlineSeconds and claims a shutdownTime (the sum of the rollout's
 * stage deadlines), so a runner that dies cannot leave them running forever.
 *
 * With claims: a SandboxTemplate and SandboxWarmPool per run and pod spec (image, resources, user),
 * `warmPool` replicas each (0: every claim starts cold); per rollout a claim with no env, so it
 * can take a warm pod; its status awaited through one watch of the namespace's claims
 * (claim-watch.ts); then the rollout's identity is attached to the pod it got — its labels and
 * annotations patched — and its env (the proxy's URL, its credential) goes with each exec, never
 * into a pod spec. Creation is admitted (admission.ts): at most `maxStarting` sandboxes between
 * create and Ready, at most `createsPerSecond` creations a second. A sandbox not Ready within
 * `readyTimeoutMs` of its create is a SandboxTimeout (an infrastructure failure: retried).
 */
import { PatchStrategy, setHeaderOptions, type V1Pod } from "@kubernetes/client-node";
import { BaseSandboxProvider } from "../base-provider.js";
import { sleep } from "../host/process-tree.js";
import { DEFAULT_COPY_LIMITS } from "../files/snapshot-writer.js";
import { baseEnvironment, DEFAULT_SANDBOX_IMAGE, SANDBOX_HOME, VERIFIER_GID, VERIFIER_UID } from "../layout.js";
import type { SandboxSpec } from "../provider.js";
import { SandboxError } from "../sandbox-error.js";
import { Admission, type AdmissionLimits } from "./admission.js";
import { ClaimWatch } from "./claim-watch.js";
import { apiMessage, apiStatus, makeKubeClients, makeKubeConfig, type KubeClients, type KubeConnection } from "./client.js";
import { lifetimeSeconds } from "./lifetime.js";
import {
  AGENT_SANDBOX,
  buildProxyOnlyNetworkPolicy,
  buildSandboxClaim,
  buildSandboxPod,
  buildSandboxTemplate,
  buildSandboxWarmPool,
  identityPatch,
  warmPoolName,
  type RolloutIdentity,
  type WarmPoolOptions,
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
  /** Warm pool replicas of each of a run's pools (with useSandboxClaims); 0: claims start cold. */
  warmPool?: number;
  /** Sandboxes created but not yet Ready at once, at most (pods or claims); absent: no cap. */
  maxStarting?: number;
  /** Sandbox creations a second, at most (token bucket); absent: no limit. */
  createsPerSecond?: number;
  /** Creations at once after a quiet spell (default createsPerSecond rounded up). */
  createBurst?: number;
  /** Life of a run's objects: owner expiry annotation and claim shutdown time. */
  ttlSeconds?: number;
  /** The proxy as seen from pods, when specs do not give one. */
  proxyUrl?: string;
  /** Create a NetworkPolicy per run allowing egress only to these proxy pods. */
  proxyPolicy?: { podLabels: Record<string, string>; port: number };
  /** From a sandbox's create to Ready, at most (default 300 s): past it, SandboxTimeout. */
  readyTimeoutMs?: number;
  pollIntervalMs?: number;
}

const DEFAULT_READY_TIMEOUT_MS = 300_000;

interface RunObjects {
  owner: { name: string; uid: string };
}

export class KubernetesSandboxProvider extends BaseSandboxProvider {
  readonly type = "kubernetes" as const;
  readonly namespace: string;
  private clientsValue: KubeClients | null = null;
  private readonly runs = new Map<string, Promise<RunObjects>>();
  /** A run's warm pools ("<run>\0<pool name>", one per pod spec), created on first use. */
  private readonly pools = new Map<string, Promise<void>>();
  private watchValue: ClaimWatch | null = null;
  /** Admission of creations: the STARTING cap and the creation-rate limiter. */
  readonly admission: Admission;

  constructor(private readonly options: KubernetesProviderOptions = {}) {
    super();
    this.namespace = options.namespace ?? "default";
    const limits: AdmissionLimits = { maxStarting: options.maxStarting, createsPerSecond: options.createsPerSecond, createBurst: options.createBurst };
    this.admission = new Admission(limits);
  }

  private get readyTimeoutMs(): number {
    return this.options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  }

  /** The watch of this namespace's claims of reins runs. */
  private get claims(): ClaimWatch {
    if (!this.watchValue) this.watchValue = new ClaimWatch(this.clients, this.namespace, "reins.dev/run");
    return this.watchValue;
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
        await this.createOrGet(
          () => this.clients.networking.createNamespacedNetworkPolicy({ namespace: ns, body: policy }),
          async () => undefined,
        );
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
      throw new SandboxError(
        "create-failed",
        spec.id,
        `cannot create the run's objects: ${apiMessage(error)}`,
        "check the cluster connection, the namespace and RBAC (configmaps, pods, pods/exec)",
        { cause: error },
      );
    }
    const env = { ...baseEnvironment(SANDBOX_HOME), ...(spec.env ?? {}) };
    const configuredProxy = spec.proxyUrl ?? this.options.proxyUrl;
    const proxyUrl = (spec.network ?? (configuredProxy ? "proxy-only" : "none")) === "proxy-only" ? configuredProxy : undefined;
    let podName: string | undefined;
    let claimName: string | undefined;
    let pool: string | undefined;
    try {
      if (this.options.useSandboxClaims) pool = await this.ensurePool(spec, owner);
    } catch (error) {
      throw new SandboxError(
        "create-failed",
        spec.id,
        `cannot create the run's warm pool: ${apiMessage(error)}`,
        "check that agent-sandbox's CRDs are installed (extensions.agents.x-k8s.io/v1beta1) and RBAC for them",
        { cause: error },
      );
    }
    // A place among the sandboxes starting and a creation token; the ready deadline runs from the create.
    const admitted = await this.admission.admit();
    try {
      if (pool) {
        const claim = buildSandboxClaim({ identity, namespace: ns, owner, warmPool: pool, ttlSeconds: this.lifetimeOf(spec) });
        claimName = claim.metadata.name;
        await this.createClaim(claim, spec.id);
        podName = await this.waitForClaim(claimName, spec.id);
        await this.attachIdentity(podName, identity, spec);
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
      await this.deleteQuietly(this.options.useSandboxClaims ? undefined : podName, claimName);
      if (error instanceof SandboxError) throw error;
      throw new SandboxError(
        "create-failed",
        spec.id,
        `cannot create the sandbox ${claimName ? "claim" : "pod"}: ${apiMessage(error)}`,
        "check the image, the namespace's quota and RBAC",
        { cause: error },
      );
    } finally {
      admitted.started();
    }
    return new KubernetesSandbox({ id: spec.id, clients: this.clients, namespace: ns, podName, claimName, env, proxyUrl });
  }

  /**
   * The claim's lifetime: the sum of the rollout's stage deadlines (starting, the try, copying its
   * workspace out), so the cluster reaps the sandbox even when this runner dies.
   */
  private lifetimeOf(spec: SandboxSpec): number {
    return lifetimeSeconds({
      startSeconds: this.readyTimeoutMs / 1000,
      runSeconds: spec.timeoutSeconds ?? this.options.ttlSeconds ?? 3600,
      finishSeconds: DEFAULT_COPY_LIMITS.timeoutMs / 1000,
    });
  }

  /**
   * The run's template and warm pool for this sandbox's pod spec (created once, then awaited until
   * its replicas are Ready, within the start deadline, so the run's first claims take warm pods);
   * its pool's name.
   */
  private async ensurePool(spec: SandboxSpec, owner: { name: string; uid: string }): Promise<string> {
    const o: WarmPoolOptions = {
      runId: spec.runId,
      namespace: this.namespace,
      image: spec.image ?? this.options.image ?? DEFAULT_SANDBOX_IMAGE,
      resources: spec.resources,
      runtimeClassName: this.options.runtimeClassName,
      replicas: this.options.warmPool ?? 0,
      owner,
      ...(spec.role === "verifier" ? { runAsUser: VERIFIER_UID, runAsGroup: VERIFIER_GID } : {}),
    };
    const name = warmPoolName(o);
    const key = `${spec.runId}\0${name}`;
    let made = this.pools.get(key);
    if (!made) {
      made = (async () => {
        await this.createCustom("sandboxtemplates", buildSandboxTemplate(o));
        await this.createCustom("sandboxwarmpools", buildSandboxWarmPool(o));
        if (o.replicas > 0) await this.warmUp(name);
      })();
      made.catch(() => this.pools.delete(key));
      this.pools.set(key, made);
    }
    await made;
    return name;
  }

  /** Waits until the pool's replicas are Ready, or the start deadline passed (claims then start what is there). */
  private async warmUp(pool: string): Promise<void> {
    const deadline = Date.now() + this.readyTimeoutMs;
    while (Date.now() < deadline) {
      const got = (await this.clients.custom.getNamespacedCustomObject({
        ...AGENT_SANDBOX,
        namespace: this.namespace,
        plural: "sandboxwarmpools",
        name: pool,
      })) as {
        spec?: { replicas?: number };
        status?: { readyReplicas?: number };
      };
      if ((got.status?.readyReplicas ?? 0) >= (got.spec?.replicas ?? 0)) return;
      await sleep(Math.min(this.options.pollIntervalMs ?? 500, 200));
    }
  }

  /** Creates the claim; one of this name left by a runner that died with it is deleted first. */
  private async createClaim(claim: Manifest, id: string): Promise<void> {
    const ref = { ...AGENT_SANDBOX, namespace: this.namespace, plural: "sandboxclaims" };
    try {
      await this.clients.custom.createNamespacedCustomObject({ ...ref, body: claim });
      return;
    } catch (error) {
      if (apiStatus(error) !== 409) throw error;
    }
    const name = claim.metadata.name;
    await this.clients.custom.deleteNamespacedCustomObject({ ...ref, name }).catch(() => undefined);
    await this.poll(id, `stale claim ${name} to go`, async () => {
      try {
        await this.clients.custom.getNamespacedCustomObject({ ...ref, name });
        return null;
      } catch (error) {
        if (apiStatus(error) === 404) return true;
        throw error;
      }
    });
    await this.clients.custom.createNamespacedCustomObject({ ...ref, body: claim });
  }

  /** The name of the Ready sandbox (and pod) the claim got; a stuck or failed start is an infrastructure failure. */
  private async waitForClaim(name: string, id: string): Promise<string> {
    const state = await this.claims.wait(name, Date.now() + this.readyTimeoutMs);
    if (state.phase === "ready") return state.sandbox;
    if (state.phase === "pending") {
      throw new SandboxError(
        "timeout",
        id,
        `claim ${name} got no Ready sandbox within ${this.readyTimeoutMs / 1000} s`,
        "the cluster may lack capacity, the warm pool's pods may not start, or the agent-sandbox controller may be down; raise sandbox.kubernetes.startTimeoutSeconds or lower maxStarting",
      );
    }
    throw new SandboxError(
      "create-failed",
      id,
      `claim ${name} ended before its sandbox was ready (${state.reason}${state.message ? `: ${state.message}` : ""})`,
      "check the agent-sandbox controller's events and the warm pool's pods",
    );
  }

  /**
   * The rollout's identity, bound after the claim so the pod could be kept warm: its labels and
   * annotations (rollout, task, harness) patched onto the pod. The rollout's env never enters the
   * pod spec: it goes with each command (exec). A pod gone or not Ready by now is a died sandbox.
   */
  private async attachIdentity(podName: string, identity: RolloutIdentity, spec: SandboxSpec): Promise<void> {
    let pod: V1Pod;
    try {
      pod = await this.clients.core.patchNamespacedPod(
        { name: podName, namespace: this.namespace, body: identityPatch(identity, spec.labels) },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    } catch (error) {
      if (apiStatus(error) === 404) throw new SandboxError("died", spec.id, `the claimed pod ${podName} is gone`, "retry the rollout in a new sandbox");
      throw error;
    }
    if (!isPodReady(pod)) throw new SandboxError("died", spec.id, `the claimed pod ${podName} is no longer running`, "retry the rollout in a new sandbox");
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
    const deadline = Date.now() + this.readyTimeoutMs;
    for (;;) {
      const value = await step();
      if (value !== null) return value;
      if (Date.now() > deadline)
        throw new SandboxError(
          "timeout",
          id,
          `${what} not ready after ${this.readyTimeoutMs} ms`,
          "the cluster may lack capacity or the image may not pull; raise sandbox.kubernetes.startTimeoutSeconds or lower maxStarting",
        );
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

  /**
   * Closing ends the provider's runs: its sandboxes are destroyed, then each run's owner is
   * deleted, and the garbage collector removes whatever still hangs from it (a policy, a warm pool,
   * pods of a runner killed before — a resumed run adopts the same owner).
   */
  override async close(): Promise<void> {
    await super.close();
    this.watchValue?.close();
    const runs = [...this.runs.keys()];
    await Promise.all(runs.map((runId) => this.cleanupRun(runId).catch(() => undefined)));
  }

  async cleanupRun(runId: string): Promise<void> {
    this.runs.delete(runId);
    for (const key of [...this.pools.keys()]) if (key.startsWith(`${runId}\0`)) this.pools.delete(key);
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
