/** One live local sandbox (see provider.ts): commands through nsenter, files through its host directories. */
import type { ChildProcess } from "node:child_process";
import { hostDirsOf, type StateDirs } from "../base-provider.js";
import { BaseSandbox, type CommandRequest } from "../base-sandbox.js";
import type { OutputSink, RunningCommand } from "../command.js";
import { hostTransport } from "../files/host-files.js";
import type { FileTransport } from "../files/transport.js";
import { runHostCommand, startHostProcess } from "../host/process-runner.js";
import { isProcessAlive, listDescendants, signalQuietly, sleep, waitForExit } from "../host/process-tree.js";
import { KILL_ALL_SCRIPT } from "../layout.js";
import { SandboxError } from "../sandbox-error.js";
import { buildConfineArgv, type Confinement } from "./confine.js";
import { buildEnterArgv } from "./keeper-args.js";
import type { Keeper } from "./keeper.js";
import { removeState } from "./state.js";

export interface LocalSandboxState {
  id: string;
  /** The provider's root, where uid leases live. */
  stateRoot: string;
  stateDir: string;
  /** Where the runner reaches the writable roots (host directories, or descriptors: roots.ts). */
  dirs: StateDirs;
  /** The workspace as a host path, for tests and diagnostics. */
  workspaceHostPath: string;
  /** Lets the capped roots go (at destroy). */
  closeRoots?: () => void;
  keeper: Keeper;
  uid: number;
  gid: number;
  isolateCommands: boolean;
  /** Control groups and rlimits every command joins before it enters the sandbox. */
  confinement: Confinement;
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

export class LocalSandbox extends BaseSandbox {
  readonly provider = "local" as const;
  /** The sandbox sees the host's /usr, and reins mounts node's own directory when it lives elsewhere. */
  readonly nodePath = process.execPath;
  /** The workspace on this host (for tests and diagnostics; readers go through the contract). */
  readonly workspaceHostPath: string;
  protected readonly files: FileTransport;
  protected override execHint = "nsenter, unshare and setpriv (util-linux) must be installed";
  private keeperExited = false;
  private gone = false;

  constructor(private readonly local: LocalSandboxState) {
    super(local.id, local.env, local.proxyUrl);
    this.workspaceHostPath = local.workspaceHostPath;
    this.files = hostTransport(hostDirsOf(local.dirs), { uid: local.uid, gid: local.gid });
    local.keeper.process.on("exit", () => {
      this.keeperExited = true;
    });
  }

  /** The sandbox user's host uid (for tests and diagnostics). */
  get uid(): number {
    return this.local.uid;
  }

  /** Host pid of the sandbox's pid 1 (for tests and diagnostics). */
  get hostPid(): number {
    return this.local.keeper.childPid;
  }

  protected async probe(): Promise<boolean> {
    return !this.keeperExited && isProcessAlive(this.local.keeper.childPid);
  }

  protected startCommand(request: CommandRequest, sink: OutputSink): RunningCommand {
    const enter = buildEnterArgv({
      targetPid: this.local.keeper.childPid,
      uid: this.local.uid,
      gid: this.local.gid,
      cwd: request.cwd,
      argv: request.argv,
      ownPidNamespace: this.local.isolateCommands,
    });
    const killTree = (child: ChildProcess): Promise<void> => killEnterTree(child, this.local.isolateCommands);
    const host = startHostProcess(buildConfineArgv(this.local.confinement, enter), { env: request.env, stdin: request.stdin, newSession: true, killTree }, sink);
    return {
      done: host.done.then((end) => ("failure" in end ? { failure: `cannot enter the sandbox: ${end.failure}` } : end)),
      kill: host.kill,
      release: () => void host.kill(),
    };
  }

  /**
   * `kill -9 -1` as the sandbox user in the sandbox's own pid namespace (not one of its own): it
   * reaches every process of this sandbox, nested command namespaces included, and nothing
   * outside it; pid 1 (the keeper) and the proxy forwarder are not the sandbox user's. When each
   * command has a pid namespace of its own and none is running, there is nothing left to kill:
   * the kernel kills a namespace's processes, and waits for them, before its init has ended.
   */
  protected async killProcesses(): Promise<void> {
    if (this.local.isolateCommands && !this.busy) return;
    const argv = buildEnterArgv({ targetPid: this.local.keeper.childPid, uid: this.local.uid, gid: this.local.gid, cwd: "/", argv: [], ownPidNamespace: false });
    // The init script is replaced by the kill script: it must not be a command of its own to kill.
    const at = argv.indexOf("/bin/sh");
    const enter = [...argv.slice(0, at), "/bin/sh", "-c", KILL_ALL_SCRIPT];
    const r = await runHostCommand(enter, { env: {}, timeoutMs: 30_000 });
    if (r.spawnError !== undefined || r.exitCode !== 0) {
      if (!(await this.probe())) throw new SandboxError("died", this.id, "the sandbox is no longer running (it ended while its processes were stopped)", "retry the rollout in a new sandbox");
      throw new SandboxError("exec-failed", this.id, `cannot stop the sandbox's processes: ${r.spawnError ?? (r.stderr.trim().slice(-300) || `exit status ${r.exitCode}`)}`, this.execHint);
    }
  }

  protected async stop(): Promise<void> {
    // pid 1 of the sandbox: when it dies the kernel kills every process in the sandbox.
    const { process: keeper, childPid } = this.local.keeper;
    // bwrap itself is in the sandbox's groups too: they can be removed once it has been reaped.
    const reaped = new Promise<void>((resolve) => {
      if (this.keeperExited) return resolve();
      const timer = setTimeout(resolve, 2000).unref();
      keeper.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    signalQuietly(childPid);
    if (keeper.pid !== undefined) signalQuietly(keeper.pid);
    this.gone = await waitForExit(childPid, 10_000);
    if (this.gone) await reaped;
  }

  protected override async removeState(): Promise<void> {
    this.local.closeRoots?.();
    if (this.gone) await removeState(this.local.stateRoot, this.local.stateDir);
  }
}
