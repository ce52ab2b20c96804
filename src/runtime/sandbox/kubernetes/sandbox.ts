/** One sandbox pod on a cluster (see provider.ts): exec over the API, files over exec, deletion. */
import type { V1Pod } from "@kubernetes/client-node";
import { BaseSandbox, type CommandRequest } from "../base-sandbox.js";
import type { OutputSink, RunningCommand } from "../command.js";
import { KILL_ALL_BUT_KEEPER, KILL_ALL_REPEATED, wrapForContainer } from "../container-command.js";
import { SandboxError } from "../sandbox-error.js";
import { execTransport } from "../files/exec-transport.js";
import type { FileTransport } from "../files/transport.js";
import { sleep } from "../host/process-tree.js";
import { SANDBOX_CONTAINER } from "../layout.js";
import { apiStatus, type KubeClients } from "./client.js";
import { AGENT_SANDBOX } from "./manifests.js";
import { startPodExec, type PodTarget } from "./pod-exec.js";

export interface KubernetesSandboxState {
  id: string;
  clients: KubeClients;
  namespace: string;
  podName: string;
  /** Set when the pod came from a SandboxClaim: destroy deletes the claim (and agent-sandbox its pod). */
  claimName?: string;
  env: Record<string, string>;
  proxyUrl?: string;
}

export function isPodReady(pod: V1Pod): boolean {
  if (pod.status?.phase !== "Running" || pod.metadata?.deletionTimestamp) return false;
  return (pod.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

export class KubernetesSandbox extends BaseSandbox {
  readonly provider = "kubernetes" as const;
  protected readonly files: FileTransport = execTransport((argv, options) => this.exec(argv, options));
  /** The exit status comes from the API server: a non-zero one is the command's own. */
  protected override exitMayMeanDeath = false;
  protected override execHint = "check the API server's exec support (v5.channel.k8s.io) and RBAC for pods/exec";

  constructor(readonly state: KubernetesSandboxState) {
    super(state.id, state.env, state.proxyUrl);
  }

  get podName(): string {
    return this.state.podName;
  }

  protected async probe(): Promise<boolean> {
    try {
      const pod = await this.state.clients.core.readNamespacedPod({ name: this.state.podName, namespace: this.state.namespace });
      return pod.status?.phase === "Running" && !pod.metadata?.deletionTimestamp;
    } catch {
      return false;
    }
  }

  private target(): PodTarget {
    return { config: this.state.clients.config, namespace: this.state.namespace, pod: this.state.podName, container: SANDBOX_CONTAINER };
  }

  protected startCommand(request: CommandRequest, sink: OutputSink): RunningCommand {
    const exec = startPodExec(this.target(), wrapForContainer(request.argv, request.cwd, request.env), request.stdin, sink);
    return {
      done: exec.done,
      kill: () => this.killInPod(() => exec.finished).then(() => exec.close()),
      release: () => exec.close(),
    };
  }

  /** Kills every process but the keeper, until the command's exec reports its end. */
  private async killInPod(finished: () => boolean): Promise<void> {
    for (let round = 0; round < 20 && !finished(); round++) {
      await startPodExec(this.target(), KILL_ALL_BUT_KEEPER).done;
      for (let i = 0; i < 10 && !finished(); i++) await sleep(25);
    }
  }

  protected async killProcesses(): Promise<void> {
    const run = await startPodExec(this.target(), KILL_ALL_REPEATED).done;
    if ("failure" in run) throw new SandboxError("exec-failed", this.id, `cannot stop the sandbox's processes: ${run.failure}`, this.execHint);
  }

  protected async stop(): Promise<void> {
    const { clients, namespace, podName, claimName } = this.state;
    const ignoreMissing = (error: unknown): void => {
      if (apiStatus(error) !== 404) throw error;
    };
    // A claimed pod goes with its claim (agent-sandbox deletes the claim's sandbox and pod).
    if (claimName) {
      await clients.custom.deleteNamespacedCustomObject({ ...AGENT_SANDBOX, namespace, plural: "sandboxclaims", name: claimName }).catch(ignoreMissing);
      return;
    }
    await clients.core.deleteNamespacedPod({ name: podName, namespace, gracePeriodSeconds: 0 }).catch(ignoreMissing);
  }
}
