/** One sandbox pod on a cluster (see kubernetes.ts): exec over the API, files over exec, deletion. */
import type { V1Pod } from "@kubernetes/client-node";
import { apiStatus, type KubeClients } from "../k8s/client.js";
import { startPodExec, type PodExecRun } from "../k8s/pod-exec.js";
import { SANDBOX_CONTAINER } from "../k8s/manifests.js";
import { KILL_ALL_BUT_KEEPER, wrapForContainer } from "./container-command.js";
import { listFilesViaExec, readFileViaExec, writeFilesViaExec } from "./exec-files.js";
import { locateInRoots } from "./host-files.js";
import { sleep } from "./process-tree.js";
import {
  SANDBOX_HOME,
  SANDBOX_WORKSPACE,
  resolveCwd,
  type ExecOptions,
  type ExecResult,
  type Sandbox,
  type SandboxFile,
  type SandboxProcess,
} from "./provider.js";
import { SandboxError, failedProcess, messageOf } from "./sandbox-error.js";

export interface KubernetesSandboxState {
  id: string;
  clients: KubeClients;
  namespace: string;
  podName: string;
  /** Set when the pod came from a SandboxClaim: destroy deletes the claim. */
  claimName?: string;
  env: Record<string, string>;
  proxyUrl?: string;
}

const ROOTS = [SANDBOX_WORKSPACE, SANDBOX_HOME, "/tmp"];

export function isPodReady(pod: V1Pod): boolean {
  if (pod.status?.phase !== "Running" || pod.metadata?.deletionTimestamp) return false;
  return (pod.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

export class KubernetesSandbox implements Sandbox {
  readonly provider = "kubernetes" as const;
  readonly id: string;
  readonly workspacePath = SANDBOX_WORKSPACE;
  readonly homePath = SANDBOX_HOME;
  readonly proxyUrl?: string;
  private destroying: Promise<void> | null = null;
  private readonly running = new Set<{ close(): void; done: Promise<PodExecRun> }>();

  constructor(
    readonly state: KubernetesSandboxState,
    private readonly onDestroyed: () => void,
  ) {
    this.id = state.id;
    this.proxyUrl = state.proxyUrl;
  }

  get podName(): string {
    return this.state.podName;
  }

  async alive(): Promise<boolean> {
    if (this.destroying) return false;
    try {
      const pod = await this.state.clients.core.readNamespacedPod({ name: this.state.podName, namespace: this.state.namespace });
      return pod.status?.phase === "Running" && !pod.metadata?.deletionTimestamp;
    } catch {
      return false;
    }
  }

  private target() {
    return { config: this.state.clients.config, namespace: this.state.namespace, pod: this.state.podName, container: SANDBOX_CONTAINER };
  }

  spawn(argv: string[], options: ExecOptions = {}): SandboxProcess {
    if (this.destroying) return failedProcess(new SandboxError("died", this.id, "the sandbox was destroyed"));
    if (argv.length === 0) return failedProcess(new SandboxError("exec-failed", this.id, "empty command"));
    let command: string[];
    try {
      command = wrapForContainer(argv, resolveCwd(options.cwd), { ...this.state.env, ...(options.env ?? {}) });
    } catch (error) {
      return failedProcess(new SandboxError("exec-failed", this.id, messageOf(error)));
    }
    const exec = startPodExec(this.target(), command, options);
    this.running.add(exec);
    let killing: Promise<void> | null = null;
    const kill = (timedOut: boolean): Promise<void> => {
      exec.markKilled(timedOut);
      if (!killing) killing = this.killInPod(() => exec.finished).then(() => exec.close());
      return killing;
    };
    const timer = options.timeoutMs && options.timeoutMs > 0 ? setTimeout(() => void kill(true), options.timeoutMs) : undefined;
    const result = exec.done.then(async (run) => {
      if (timer) clearTimeout(timer);
      this.running.delete(exec);
      return this.toResult(run);
    });
    result.catch(() => undefined);
    return {
      wait: () => result,
      kill: async () => {
        await kill(false);
        await result.catch(() => undefined);
      },
    };
  }

  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    return this.spawn(argv, options).wait();
  }

  /** Kills every process but the keeper, until the command's exec reports its end. */
  private async killInPod(finished: () => boolean): Promise<void> {
    for (let round = 0; round < 20 && !finished(); round++) {
      const killer = startPodExec(this.target(), KILL_ALL_BUT_KEEPER, {});
      await killer.done;
      for (let i = 0; i < 10 && !finished(); i++) await sleep(25);
    }
  }

  private async toResult(run: PodExecRun): Promise<ExecResult> {
    const killedByRunner = run.killed || this.destroying !== null;
    const base = {
      stdout: run.stdout.text(),
      stderr: run.stderr.text(),
      stdoutTruncated: run.stdout.truncated,
      stderrTruncated: run.stderr.truncated,
      timedOut: run.timedOut,
      durationMs: run.durationMs,
    };
    if (killedByRunner) return { ...base, exitCode: null, signal: "SIGKILL" };
    if (run.outcome && "exitCode" in run.outcome) return { ...base, exitCode: run.outcome.exitCode, signal: null };
    const why = run.connectError?.message ?? (run.outcome && "error" in run.outcome ? run.outcome.error : "the exec stream closed without a status");
    if (!(await this.alive())) throw new SandboxError("died", this.id, `the pod is no longer running (${why})`, "retry the rollout in a new sandbox");
    throw new SandboxError("exec-failed", this.id, `exec failed: ${why}`, "check the API server's exec support (v5.channel.k8s.io) and RBAC for pods/exec");
  }

  private check(p: string): void {
    if (!locateInRoots(p, ROOTS.map((r) => ({ sandboxPath: r, hostPath: r })))) {
      throw new SandboxError("exec-failed", this.id, `path "${p}" is outside the workspace, HOME and /tmp`, "use a path relative to the workspace");
    }
  }

  async writeFiles(files: SandboxFile[]): Promise<void> {
    for (const f of files) this.check(f.path);
    try {
      await writeFilesViaExec((a, o) => this.exec(a, o), SANDBOX_WORKSPACE, ROOTS, files);
    } catch (error) {
      if (error instanceof SandboxError) throw error;
      throw new SandboxError("exec-failed", this.id, `cannot write files: ${messageOf(error)}`, "", { cause: error });
    }
  }

  async readFile(p: string): Promise<Buffer> {
    this.check(p);
    return readFileViaExec((a, o) => this.exec(a, o), SANDBOX_WORKSPACE, p);
  }

  async listFiles(dir = "."): Promise<string[]> {
    this.check(dir);
    return listFilesViaExec((a, o) => this.exec(a, o), SANDBOX_WORKSPACE, dir);
  }

  destroy(): Promise<void> {
    if (!this.destroying) this.destroying = this.teardown();
    return this.destroying;
  }

  private async teardown(): Promise<void> {
    const { clients, namespace, podName, claimName } = this.state;
    for (const exec of this.running) exec.close();
    const ignoreMissing = (error: unknown): void => {
      if (apiStatus(error) !== 404) throw error;
    };
    try {
      if (claimName) {
        await clients.custom
          .deleteNamespacedCustomObject({ group: "extensions.agents.x-k8s.io", version: "v1beta1", namespace, plural: "sandboxclaims", name: claimName })
          .catch(ignoreMissing);
      }
      await clients.core.deleteNamespacedPod({ name: podName, namespace, gracePeriodSeconds: 0 }).catch(ignoreMissing);
    } finally {
      await Promise.all([...this.running].map((e) => e.done));
      this.onDestroyed();
    }
  }
}

