/** One live local sandbox (see provider.ts): commands through the enter helper (or nsenter), files through its host directories. */
import type { ChildProcess } from "node:child_process";
import { hostDirsOf, type StateDirs } from "../base-provider.js";
import { BaseSandbox, type CommandRequest } from "../base-sandbox.js";
import type { CommandEnd, OutputSink, RunningCommand } from "../command.js";
import { hostTransport } from "../files/host-files.js";
import type { FileTransport } from "../files/transport.js";
import { runHostCommand, startHostProcess } from "../host/process-runner.js";
import { isProcessAlive, listDescendants, signalQuietly, sleep, waitForExit } from "../host/process-tree.js";
import { KILL_ALL_SCRIPT } from "../layout.js";
import { SandboxError } from "../sandbox-error.js";
import { buildConfineArgv, type Confinement } from "./confine.js";
import { buildEnterArgv, buildHelperArgv } from "./keeper-args.js";
import type { Keeper } from "./keeper.js";
import { startServedProcess } from "./served-command.js";
import type { Spawner } from "./spawner.js";
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
  /** The one-process way in (enter.c, native.ts); unset: the chain of programs. */
  enterHelper?: string;
  /** Starts commands without forking the runner (spawner.ts); unset: the runner spawns them. */
  spawner?: Spawner;
  /** Control groups and rlimits every command joins before it enters the sandbox. */
  confinement: Confinement;
  env: Record<string, string>;
  proxyUrl?: string;
}

/**
 * Kills everything behind one way in. With its own pid namespace, the command's init is at depth
 * 2 (nsenter → unshare → init, or the helper's two forks): killing it makes the kernel kill the
 * whole namespace. unshare (the helper's first fork) is
 * never killed before it has forked that init, since an init forked in that instant would miss
 * its parent-death signal and survive. Without a pid namespace every descendant is killed.
 */
async function killEnterTree(pid: number | undefined, exited: () => boolean, ownPidNamespace: boolean): Promise<void> {
  if (pid === undefined) return;
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
  protected override execHint = "nsenter, unshare and setpriv (util-linux) must be installed, or a C compiler (cc) for reins's enter helper";
  private keeperExited = false;
  private gone = false;

  constructor(private readonly local: LocalSandboxState) {
    super(local.id, local.env, local.proxyUrl);
    this.workspaceHostPath = local.workspaceHostPath;
    this.files = hostTransport(hostDirsOf(local.dirs), { uid: local.uid, gid: local.gid });
    void local.keeper.ended.then(() => {
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
    const { keeper, uid, gid, isolateCommands, confinement, enterHelper, spawner } = this.local;
    const enter = { targetPid: keeper.childPid, uid, gid, cwd: request.cwd, argv: request.argv, ownPidNamespace: isolateCommands };
    const argv = enterHelper ? buildHelperArgv(enterHelper, enter, confinement) : buildConfineArgv(confinement, buildEnterArgv(enter));
    let host: { done: Promise<CommandEnd>; kill: () => Promise<void> };
    if (spawner?.alive) {
      const killTree = (pid: number, ended: () => boolean): Promise<void> => killEnterTree(pid, ended, isolateCommands);
      host = startServedProcess(spawner, argv, { env: request.env, stdin: request.stdin, killTree }, sink);
    } else {
      const killTree = (child: ChildProcess): Promise<void> =>
        killEnterTree(child.pid, () => child.exitCode !== null || child.signalCode !== null, isolateCommands);
      host = startHostProcess(argv, { env: request.env, stdin: request.stdin, newSession: true, killTree }, sink);
    }
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
    const argv = buildEnterArgv({
      targetPid: this.local.keeper.childPid,
      uid: this.local.uid,
      gid: this.local.gid,
      cwd: "/",
      argv: [],
      ownPidNamespace: false,
    });
    // The init script is replaced by the kill script: it must not be a command of its own to kill.
    const at = argv.indexOf("/bin/sh");
    const enter = [...argv.slice(0, at), "/bin/sh", "-c", KILL_ALL_SCRIPT];
    const r = await runHostCommand(enter, { env: {}, timeoutMs: 30_000 });
    if (r.spawnError !== undefined || r.exitCode !== 0) {
      if (!(await this.probe()))
        throw new SandboxError(
          "died",
          this.id,
          "the sandbox is no longer running (it ended while its processes were stopped)",
          "retry the rollout in a new sandbox",
        );
      throw new SandboxError(
        "exec-failed",
        this.id,
        `cannot stop the sandbox's processes: ${r.spawnError ?? (r.stderr.trim().slice(-300) || `exit status ${r.exitCode}`)}`,
        this.execHint,
      );
    }
  }

  protected async stop(): Promise<void> {
    // pid 1 of the sandbox: when it dies the kernel kills every process in the sandbox.
    const keeper = this.local.keeper;
    // bwrap itself is in the sandbox's groups too: they can be removed once it has ended.
    let timer: NodeJS.Timeout | undefined;
    const reaped = Promise.race([keeper.ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000).unref()))]).then(() => clearTimeout(timer));
    signalQuietly(keeper.childPid);
    signalQuietly(keeper.pid);
    this.gone = await waitForExit(keeper.childPid, 10_000);
    if (this.gone) await reaped;
  }

  protected override async removeState(): Promise<void> {
    this.local.closeRoots?.();
    if (this.gone) await removeState(this.local.stateRoot, this.local.stateDir);
  }
}
