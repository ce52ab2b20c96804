/** One live local sandbox (see local.ts): commands, files and destruction. */
import type { ChildProcess } from "node:child_process";
import { rm } from "node:fs/promises";
import os from "node:os";
import { buildEnterArgv } from "./local-args.js";
import { listInside, locateInRoots, readInside, writeInside, type HostRoot } from "./host-files.js";
import { execResultOf, startHostProcess, type HostProcess, type HostRun } from "./host-process.js";
import { isProcessAlive, listDescendants, signalQuietly, sleep, waitForExit } from "./process-tree.js";
import {
  SANDBOX_HOME,
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

export interface LocalSandboxState {
  spec: SandboxSpec;
  stateDir: string;
  dirs: { workspace: string; home: string; tmp: string };
  /** The outer bwrap process. */
  keeper: ChildProcess;
  /** Host pid of the sandbox's pid 1. */
  childPid: number;
  uid: number;
  gid: number;
  isolateCommands: boolean;
  env: Record<string, string>;
  proxyUrl?: string;
}

/**
 * Kills everything behind one nsenter. With its own pid namespace, the command's init is at depth
 * 2 (nsenter → unshare → init): killing it makes the kernel kill the whole namespace. unshare is
 * never killed before it has forked that init, since an init forked in that instant would miss
 * its parent-death signal and survive. Without a pid namespace every descendant is killed.
 */
async function killEnterTree(child: ChildProcess, ownPidNamespace: boolean): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
  const deadline = Date.now() + 5000;
  for (let round = 0; !exited(); round++) {
    const tree = listDescendants(pid);
    const late = Date.now() > deadline;
    const targets = ownPidNamespace && !late ? tree.filter((p) => p.depth >= 2) : tree;
    for (const p of targets) signalQuietly(p.pid);
    if (late && tree.length === 0) signalQuietly(pid);
    if (late && Date.now() > deadline + 5000) return;
    await sleep(round < 20 ? 2 : 20);
  }
}

export class LocalSandbox implements Sandbox {
  readonly provider = "local" as const;
  readonly id: string;
  readonly workspacePath = SANDBOX_WORKSPACE;
  readonly homePath = SANDBOX_HOME;
  readonly workspaceHostPath: string;
  readonly proxyUrl?: string;
  private readonly roots: HostRoot[];
  private readonly running = new Set<HostProcess>();
  private keeperExited = false;
  private destroying: Promise<void> | null = null;

  constructor(
    private readonly state: LocalSandboxState,
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
    state.keeper.on("exit", () => {
      this.keeperExited = true;
    });
  }

  /** Host pid of the sandbox's pid 1 (for tests and diagnostics). */
  get hostPid(): number {
    return this.state.childPid;
  }

  async alive(): Promise<boolean> {
    return this.destroying === null && !this.keeperExited && isProcessAlive(this.state.childPid);
  }

  spawn(argv: string[], options: ExecOptions = {}): SandboxProcess {
    if (this.destroying) return failedProcess(new SandboxError("died", this.id, "the sandbox was destroyed"));
    if (this.keeperExited || !isProcessAlive(this.state.childPid)) {
      return failedProcess(new SandboxError("died", this.id, "the sandbox is no longer running", "retry the rollout in a new sandbox"));
    }
    if (argv.length === 0) return failedProcess(new SandboxError("exec-failed", this.id, "empty command"));
    const enter = buildEnterArgv({
      targetPid: this.state.childPid,
      uid: this.state.uid,
      gid: this.state.gid,
      cwd: resolveCwd(options.cwd),
      argv,
      ownPidNamespace: this.state.isolateCommands,
    });
    const hostProcess = startHostProcess(enter[0], enter.slice(1), {
      ...options,
      hostEnv: { ...this.state.env, ...(options.env ?? {}) },
      killTree: (child) => killEnterTree(child, this.state.isolateCommands),
      newSession: true,
    });
    this.running.add(hostProcess);
    const result = hostProcess.done.then((run) => {
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

  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    return this.spawn(argv, options).wait();
  }

  private toResult(run: HostRun): ExecResult {
    if (run.spawnError) {
      throw new SandboxError("exec-failed", this.id, `cannot enter the sandbox: ${run.spawnError.message}`, "nsenter, unshare and setpriv (util-linux) must be installed");
    }
    const killedByRunner = run.killed || this.destroying !== null;
    if (!killedByRunner && run.code !== 0 && (this.keeperExited || !isProcessAlive(this.state.childPid))) {
      throw new SandboxError("died", this.id, "the sandbox died while a command was running", "retry the rollout in a new sandbox");
    }
    return execResultOf(run, killedByRunner, run.hostSignal ? 128 + (signalNumber(run.hostSignal) ?? 9) : run.code);
  }

  private locate(p: string): { root: HostRoot; rel: string } {
    const found = locateInRoots(p, this.roots);
    if (!found) throw new SandboxError("exec-failed", this.id, `path "${p}" is outside the workspace, HOME and /tmp`, "use a path relative to the workspace");
    return found;
  }

  async writeFiles(files: SandboxFile[]): Promise<void> {
    for (const f of files) {
      const { root, rel } = this.locate(f.path);
      try {
        await writeInside(root.hostPath, rel, f.content, f.mode ?? 0o644, { uid: this.state.uid, gid: this.state.gid });
      } catch (error) {
        throw new SandboxError("exec-failed", this.id, `cannot write ${f.path}: ${messageOf(error)}`, "", { cause: error });
      }
    }
  }

  async readFile(p: string): Promise<Buffer> {
    const { root, rel } = this.locate(p);
    return readInside(root.hostPath, rel);
  }

  async listFiles(dir = "."): Promise<string[]> {
    const { root, rel } = this.locate(dir);
    return listInside(root.hostPath, rel);
  }

  destroy(): Promise<void> {
    if (!this.destroying) this.destroying = this.teardown();
    return this.destroying;
  }

  private async teardown(): Promise<void> {
    const { keeper, childPid, stateDir } = this.state;
    // pid 1 of the sandbox: when it dies the kernel kills every process in the sandbox.
    signalQuietly(childPid);
    if (keeper.pid !== undefined) signalQuietly(keeper.pid);
    const gone = await waitForExit(childPid, 10_000);
    await Promise.all([...this.running].map((p) => p.kill()));
    await Promise.all([...this.running].map((p) => p.done));
    if (gone) await rm(stateDir, { recursive: true, force: true }).catch(() => undefined);
    this.onDestroyed();
  }
}

function signalNumber(signal: NodeJS.Signals): number | undefined {
  return (os.constants.signals as Record<string, number>)[signal];
}

