/** One played pod (see podman.ts): commands through `podman exec`, files, destruction. */
import type { ChildProcess } from "node:child_process";
import { rm } from "node:fs/promises";
import type { Manifest } from "../k8s/manifests.js";
import { KILL_ALL_BUT_KEEPER, wrapForContainer } from "./container-command.js";
import { listFilesViaExec, readFileViaExec, writeFilesViaExec } from "./exec-files.js";
import { listInside, locateInRoots, readInside, writeInside, type HostRoot } from "./host-files.js";
import { execResultOf, startHostProcess, type HostProcess, type HostRun } from "./host-process.js";
import { runPodman, type PodmanCli } from "./podman-cli.js";
import { signalQuietly, sleep } from "./process-tree.js";
import {
  SANDBOX_GID,
  SANDBOX_HOME,
  SANDBOX_UID,
  SANDBOX_WORKSPACE,
  resolveCwd,
  type ExecOptions,
  type ExecResult,
  type Sandbox,
  type SandboxFile,
  type SandboxProcess,
  type SandboxSpec,
} from "./provider.js";
import { SandboxError, failedProcess, messageOf } from "./sandbox-error.js";

export interface PodmanSandboxState {
  spec: SandboxSpec;
  cli: PodmanCli;
  podName: string;
  container: string;
  stateDir: string;
  dirs: { workspace: string; home: string; tmp: string };
  env: Record<string, string>;
  /** The manifest as played. */
  manifest: Manifest;
  fileTransfer: "host" | "exec";
  proxyUrl?: string;
}

export class PodmanSandbox implements Sandbox {
  readonly provider = "podman" as const;
  readonly id: string;
  readonly workspacePath = SANDBOX_WORKSPACE;
  readonly homePath = SANDBOX_HOME;
  readonly workspaceHostPath: string;
  readonly proxyUrl?: string;
  private readonly roots: HostRoot[];
  private readonly running = new Set<HostProcess>();
  private destroying: Promise<void> | null = null;

  constructor(
    readonly state: PodmanSandboxState,
    private readonly onDestroyed: () => void,
  ) {
    this.id = state.spec.id;
    this.workspaceHostPath = state.dirs.workspace;
    this.proxyUrl = state.proxyUrl;
    this.roots = [
      { sandboxPath: SANDBOX_WORKSPACE, hostPath: state.dirs.workspace },
      { sandboxPath: SANDBOX_HOME, hostPath: state.dirs.home },
      { sandboxPath: "/tmp", hostPath: state.dirs.tmp },
    ];
  }

  get podName(): string {
    return this.state.podName;
  }

  async alive(): Promise<boolean> {
    if (this.destroying) return false;
    const r = await runPodman(this.state.cli, ["container", "inspect", "-f", "{{.State.Running}}", this.state.container]);
    return r.code === 0 && r.stdout.trim() === "true";
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
    const interactive = options.stdin !== undefined ? ["-i"] : [];
    const hostProcess = startHostProcess(this.state.cli.binary, ["exec", ...interactive, this.state.container, ...command], {
      ...options,
      hostEnv: this.state.cli.env,
      killTree: (child) => this.killInContainer(child),
    });
    this.running.add(hostProcess);
    const result = hostProcess.done.then(async (run) => {
      this.running.delete(hostProcess);
      return this.toResult(run);
    });
    result.catch(() => undefined);
    return {
      wait: () => result,
      kill: async () => {
        await hostProcess.kill();
        await result.catch(() => undefined);
      },
    };
  }

  /**
   * Killing the podman client would leave the command running in the container, so the command is
   * killed there (with everything else but the keeper) until the client sees it end. Repeated,
   * because a command whose exec session is still starting is not there to be killed yet.
   */
  private async killInContainer(child: ChildProcess): Promise<void> {
    const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
    for (let round = 0; round < 20 && !exited(); round++) {
      await runPodman(this.state.cli, ["exec", this.state.container, ...KILL_ALL_BUT_KEEPER], 30_000);
      for (let i = 0; i < 10 && !exited(); i++) await sleep(25);
    }
    if (!exited() && child.pid !== undefined) signalQuietly(child.pid);
  }

  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    return this.spawn(argv, options).wait();
  }

  private async toResult(run: HostRun): Promise<ExecResult> {
    if (run.spawnError) throw new SandboxError("exec-failed", this.id, `cannot run podman: ${run.spawnError.message}`);
    const killedByRunner = run.killed || this.destroying !== null;
    if (!killedByRunner && run.code !== 0 && !(await this.alive())) {
      throw new SandboxError("died", this.id, `the pod is no longer running (${run.stderr.text().trim().slice(-300)})`, "retry the rollout in a new sandbox");
    }
    if (!killedByRunner && run.code === 125) {
      throw new SandboxError("exec-failed", this.id, `podman exec failed: ${run.stderr.text().trim().slice(-300)}`);
    }
    return execResultOf(run, killedByRunner, run.code);
  }

  private locate(p: string): { root: HostRoot; rel: string } {
    const found = locateInRoots(p, this.roots);
    if (!found) throw new SandboxError("exec-failed", this.id, `path "${p}" is outside the workspace, HOME and /tmp`, "use a path relative to the workspace");
    return found;
  }

  async writeFiles(files: SandboxFile[]): Promise<void> {
    for (const f of files) this.locate(f.path);
    try {
      if (this.state.fileTransfer === "exec") {
        await writeFilesViaExec((a, o) => this.exec(a, o), SANDBOX_WORKSPACE, this.roots.map((r) => r.sandboxPath), files);
        return;
      }
      for (const f of files) {
        const { root, rel } = this.locate(f.path);
        await writeInside(root.hostPath, rel, f.content, f.mode ?? 0o644, { uid: SANDBOX_UID, gid: SANDBOX_GID });
      }
    } catch (error) {
      if (error instanceof SandboxError) throw error;
      throw new SandboxError("exec-failed", this.id, `cannot write files: ${messageOf(error)}`, "", { cause: error });
    }
  }

  async readFile(p: string): Promise<Buffer> {
    const { root, rel } = this.locate(p);
    if (this.state.fileTransfer === "exec") return readFileViaExec((a, o) => this.exec(a, o), SANDBOX_WORKSPACE, p);
    return readInside(root.hostPath, rel);
  }

  async listFiles(dir = "."): Promise<string[]> {
    const { root, rel } = this.locate(dir);
    if (this.state.fileTransfer === "exec") return listFilesViaExec((a, o) => this.exec(a, o), SANDBOX_WORKSPACE, dir);
    return listInside(root.hostPath, rel);
  }

  destroy(): Promise<void> {
    if (!this.destroying) this.destroying = this.teardown();
    return this.destroying;
  }

  private async teardown(): Promise<void> {
    const { cli, podName, stateDir } = this.state;
    await runPodman(cli, ["pod", "stop", "-t", "0", podName], 60_000);
    const removed = await runPodman(cli, ["pod", "rm", "-f", podName], 60_000);
    for (const p of this.running) if (p.child.pid !== undefined) signalQuietly(p.child.pid);
    await Promise.all([...this.running].map((p) => p.done));
    if (removed.code === 0) await rm(stateDir, { recursive: true, force: true }).catch(() => undefined);
    this.onDestroyed();
  }
}

