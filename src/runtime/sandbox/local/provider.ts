/**
 * The `local` provider (the embedded default): Linux namespaces through bubblewrap.
 *
 * A sandbox is a "keeper" bwrap process that holds a mount, pid, network, ipc and uts namespace;
 * commands join those namespaces, each in a pid namespace of its own. Destroying the sandbox kills
 * the keeper's pid 1, and the kernel then kills every process in the sandbox: there is no way to
 * outlive it (setsid, nohup and ignored SIGTERM do not help).
 *
 * Processes: where the host has a C compiler, keepers and commands are started by the spawner
 * (spawner.ts: the runner never forks itself) and a command enters through one small program
 * (enter.c); otherwise the runner spawns them, and a command passes through nsenter, unshare and
 * setpriv (native.ts says why the first is the default).
 *
 * Limits (spec.resources): every process of a sandbox joins the sandbox's pids, memory and cpu
 * control groups and gets its rlimits (open files, CPU seconds; address space and file size where
 * no group or tmpfs holds memory or disk) before it enters the sandbox (confine.ts). Run as
 * root, a sandbox's uid, state and groups are made in advance, while the previous sandbox's keeper
 * starts (spares.ts). Run as root, each sandbox runs as a host uid of its own (uids.ts), and the
 * workspace, HOME and /tmp are tmpfs capped at diskMiB each: made by bwrap in the sandbox's own
 * mount namespace and reached by the runner through descriptors it holds (roots.ts), or, where no
 * memory group holds the kernel memory of their files (or bwrap is older than 0.8), mounted on the
 * host with a cap on their number of files too. Otherwise sandboxes run as `uid`, on host
 * directories.
 */
import { lstatSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { BaseSandboxProvider, hostSetup, proxySocketFor } from "../base-provider.js";
import {
  baseEnvironment,
  DEFAULT_PROXY_PORT,
  limitsOf,
  type Limits,
  SANDBOX_GID,
  SANDBOX_HOME,
  SANDBOX_UID,
  SANDBOX_WORKSPACE,
  VERIFIER_GID,
  VERIFIER_UID,
} from "../layout.js";
import type { SandboxSpec } from "../provider.js";
import { signalQuietly, waitForExit } from "../host/process-tree.js";
import { messageOf, SandboxError } from "../sandbox-error.js";
import { buildConfineArgv, type Confinement } from "./confine.js";
import { prepareLocalHost, withSandboxUser, type LocalHost } from "./host.js";
import { buildHelperConfineArgv, buildKeeperArgs, buildKeeperScript, nodeForwarder, socatForwarder, type KeeperLayout } from "./keeper-args.js";
import { startKeeper } from "./keeper.js";
import { OWNER_FILE, ownerRecord } from "./owner.js";
import { openRoots, type SandboxRoots } from "./roots.js";
import { LocalSandbox } from "./sandbox.js";
import { SparePool } from "./spares.js";
import { acquireSpawner, type Spawner } from "./spawner.js";
import { layOutState, removeState, removeStateNow, type RootsCap, type SandboxState } from "./state.js";
import { DEFAULT_UID_RANGE, leaseUid, type UidRange } from "./uids.js";

export interface LocalProviderOptions {
  /** Where sandbox state (workspace, HOME, /tmp) lives; default $TMPDIR/reins-sandboxes. Hidden from sandboxes. */
  rootDir?: string;
  /**
   * One uid (and gid) for every sandbox. Default: run as root, each sandbox gets a host uid of its
   * own from `uidRange`; otherwise 1000.
   */
  uid?: number;
  gid?: number;
  /** Where sandboxes' own uids come from; default 1,900,000,000 and the million after it. */
  uidRange?: UidRange;
  /** Host paths hidden from every sandbox, on top of the defaults (the run directory belongs here). */
  hidePaths?: string[];
  /** Top-level host directories shown read-only; default usr, bin, sbin, lib*, etc, opt, var, sys. */
  systemDirs?: string[];
  /** In-sandbox proxy forwarder; default socat when installed, else the host's node. */
  forwarder?: "auto" | "socat" | "node";
  /** How long creation may take before it counts as failed; default 30 s. */
  readyTimeoutMs?: number;
  /**
   * Each command in a pid namespace of its own, so that everything it started ends with it
   * (default true). With false, commands share the sandbox's pid namespace like processes in a
   * container, and background processes live until destroy().
   */
  isolateCommands?: boolean;
  /**
   * Start keepers and commands through reins's small C programs (native.ts: the spawner and the
   * one-process way in; default true, where a C compiler builds them); false: the runner spawns
   * them itself, through the chain of programs (confining shell, nsenter, unshare, setpriv).
   */
  native?: boolean;
}

/** One sandbox's state made before its keeper starts (see prepareState). */
interface PreparedState {
  stateDir: string;
  user: { uid: number; gid: number; own: boolean };
  cap: RootsCap;
  state: SandboxState;
}

function safeName(id: string): string {
  return id.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 60) || "sandbox";
}

export class LocalSandboxProvider extends BaseSandboxProvider {
  readonly type = "local" as const;
  readonly rootDir: string;
  private readonly uid: number;
  private readonly gid: number;
  private readonly host: (sandboxId: string) => Promise<LocalHost>;
  private readonly stamp = ownerRecord();
  /** State prepared for the next sandbox with the same limits, off the critical path of its creation. */
  private readonly spares = new SparePool<PreparedState>((p) => removeStateNow(this.rootDir, p.stateDir));
  /** Starts this provider's processes without forking the runner; held from the first creation to close(). */
  private spawner: Promise<Spawner | null> | null = null;

  constructor(private readonly options: LocalProviderOptions = {}) {
    super();
    this.rootDir = path.resolve(options.rootDir ?? path.join(os.tmpdir(), "reins-sandboxes"));
    this.uid = options.uid ?? SANDBOX_UID;
    this.gid = options.gid ?? SANDBOX_GID;
    this.host = hostSetup(
      () => prepareLocalHost(this.rootDir, this.uid, this.gid, SANDBOX_HOME, options.hidePaths ?? [], options.systemDirs, options.native !== false),
      (error) => `cannot prepare the sandbox root ${this.rootDir}: ${messageOf(error)}`,
      "check that the directory is writable",
    );
  }

  protected async createSandbox(spec: SandboxSpec): Promise<LocalSandbox> {
    const host = await this.host(spec.id);
    if (!host.bwrap) {
      throw new SandboxError("create-failed", spec.id, "bubblewrap (bwrap) is not installed", "install it: apt-get install -y bubblewrap");
    }
    const socket = proxySocketFor(spec);
    const limits = limitsOf(spec.resources);
    const poolable = this.ownUids(host);
    // A sandbox with a uid of its own takes the state prepared in advance for its limits, if any.
    const prepared = (poolable ? this.spares.take(JSON.stringify(limits)) : undefined) ?? this.prepareState(host, safeName(spec.id), limits, spec.role);
    const refill = (): void => {
      if (poolable) this.spares.refill(JSON.stringify(limits), () => this.prepareState(host, "sandbox", limits, spec.role));
    };
    try {
      return await this.startSandbox(spec, host, prepared, limits, socket, refill);
    } catch (error) {
      await removeState(this.rootDir, prepared.stateDir).catch(() => undefined);
      throw error;
    } finally {
      refill();
    }
  }

  override async close(): Promise<void> {
    await super.close();
    const spawner = this.spawner;
    this.spawner = null;
    (await spawner)?.release();
    await this.spares.drain((p) => removeState(this.rootDir, p.stateDir).then(() => undefined));
  }

  /** The spawner (when reins's C programs could be built and it started); undefined: the runner spawns. */
  private async spawnerFor(host: LocalHost): Promise<Spawner | undefined> {
    if (!host.spawnBinary) return undefined;
    this.spawner ??= acquireSpawner(host.spawnBinary);
    const spawner = await this.spawner;
    return spawner?.alive ? spawner : undefined;
  }

  /** Whether each sandbox gets a host uid of its own (run as root, no fixed uid). */
  private ownUids(host: LocalHost): boolean {
    return this.options.uid === undefined && host.root;
  }

  /**
   * A sandbox's state before its keeper starts: the state directory with its owner stamp, its
   * user (a leased uid with its passwd and group files, when it has one of its own), its roots'
   * layout and its control groups with their limits. Synchronous: a handful of small syscalls,
   * cheaper than hops through the thread pool.
   */
  private prepareState(host: LocalHost, name: string, limits: Limits, role: SandboxSpec["role"]): PreparedState {
    const stateDir = mkdtempSync(path.join(this.rootDir, `${name}-`));
    try {
      writeFileSync(path.join(stateDir, OWNER_FILE), this.stamp);
      // A verifier's sandbox never shares the agents' uid: a leased uid is its own anyway, a fixed
      // one is replaced by the verifier's.
      const leased = this.userFor(host, stateDir);
      const user = role === "verifier" && !leased.own ? { uid: VERIFIER_UID, gid: VERIFIER_GID, own: false } : leased;
      // bwrap's tmpfs takes no cap on its number of files: only a memory group bounds what they cost.
      const cap = !host.root ? "none" : host.bwrapSizes && host.cgroups?.parents.memory ? "sandbox" : "host";
      const state = layOutState(stateDir, { uid: user.uid, gid: user.gid, limits, cap, cgroups: host.cgroups, owner: this.stamp });
      return { stateDir, user, cap, state };
    } catch (error) {
      // Nothing has run in it yet: removed at once.
      removeStateNow(this.rootDir, stateDir);
      throw error;
    }
  }

  /** The sandbox's user: its own leased uid when the runner is root and none was fixed. */
  private userFor(host: LocalHost, stateDir: string): { uid: number; gid: number; own: boolean } {
    if (!this.ownUids(host)) return { uid: this.uid, gid: this.gid, own: false };
    const uid = leaseUid(this.rootDir, stateDir, this.options.uidRange ?? DEFAULT_UID_RANGE);
    writeFileSync(path.join(stateDir, "uid"), `${uid}\n`);
    writeFileSync(path.join(stateDir, "passwd"), withSandboxUser(host.passwdText, `sandbox:x:${uid}:${uid}:sandbox:${SANDBOX_HOME}:/bin/sh`, uid, 2));
    writeFileSync(path.join(stateDir, "group"), withSandboxUser(host.groupText, `sandbox:x:${uid}:`, uid, 2));
    return { uid, gid: uid, own: true };
  }

  private async startSandbox(
    spec: SandboxSpec,
    host: LocalHost,
    prepared: PreparedState,
    limits: Limits,
    socket: string | undefined,
    launched: () => void,
  ): Promise<LocalSandbox> {
    const { stateDir, user, cap, state } = prepared;
    const hostDirs = state.dirs ?? { workspace: path.join(stateDir, "workspace"), home: path.join(stateDir, "home"), tmp: path.join(stateDir, "tmp") };
    const controllers = state.cgroups?.controllers ?? [];
    const confinement: Confinement = {
      joins: state.cgroups?.joins ?? [],
      limits,
      fallback: { memory: !controllers.includes("memory"), disk: cap === "none" },
      ownUid: user.own,
    };
    const port = spec.proxyPort ?? DEFAULT_PROXY_PORT;
    if (socket && this.options.forwarder === "socat" && !host.socat) {
      throw new SandboxError("create-failed", spec.id, "socat is not installed", "install it (apt-get install -y socat) or use forwarder: node");
    }
    const useSocat = this.options.forwarder === "socat" || (this.options.forwarder !== "node" && host.socat !== null);
    const forwarder = !socket ? null : useSocat ? socatForwarder(host.socat as string, port) : nodeForwarder(port);
    const layout: KeeperLayout = {
      hostEntries: host.hostEntries,
      hide: [...host.hide, ...hiddenFor(spec)],
      emptyFile: host.emptyFile,
      passwdFile: user.own ? path.join(stateDir, "passwd") : host.passwdFile,
      groupFile: user.own ? path.join(stateDir, "group") : host.groupFile,
      workspaceHost: hostDirs.workspace,
      homeHost: hostDirs.home,
      tmpHost: hostDirs.tmp,
      capBytes: state.capBytes,
      workspacePath: SANDBOX_WORKSPACE,
      homePath: SANDBOX_HOME,
      mounts: (spec.mounts ?? []).map((m) => ({ hostPath: m.hostPath, sandboxPath: m.sandboxPath, readOnly: m.readOnly !== false })),
      proxySocketHost: socket,
      forwarderNodeHost: forwarder && !useSocat ? process.execPath : undefined,
      hostname: "sandbox",
      network: socket ? "proxy-only" : "none",
    };
    const bwrap = [host.bwrap as string, ...buildKeeperArgs(layout), "--", "/bin/sh", "-c", buildKeeperScript(forwarder, port)];
    // The keeper's shell (or the helper, when there are no host mounts to make) makes any host
    // mounts, joins the groups and sets the rlimits before bwrap runs.
    const argv =
      host.enterHelper && !state.fstab
        ? buildHelperConfineArgv(host.enterHelper, confinement, bwrap)
        : buildConfineArgv({ ...confinement, fstab: state.fstab }, bwrap);
    const spawner = await this.spawnerFor(host);
    // The next sandbox's state is made while this one's keeper starts (in other processes).
    const keeper = await startKeeper(argv, spec.id, path.join(stateDir, "info"), this.options.readyTimeoutMs ?? 30_000, spawner, launched);
    let roots: SandboxRoots | undefined;
    try {
      roots = state.capBytes === undefined ? undefined : openRoots(keeper.childPid, stateDir, user);
    } catch (error) {
      signalQuietly(keeper.childPid);
      signalQuietly(keeper.pid);
      await waitForExit(keeper.childPid, 10_000);
      throw new SandboxError(
        "create-failed",
        spec.id,
        `cannot reach the sandbox's writable roots: ${messageOf(error)}`,
        "the runner must be able to open /proc/<pid>/root of its sandboxes (root, no restrictive LSM policy)",
      );
    }
    return new LocalSandbox({
      id: spec.id,
      stateRoot: this.rootDir,
      stateDir,
      dirs: roots?.dirs ?? hostDirs,
      workspaceHostPath: hostDirs.workspace,
      closeRoots: roots?.close,
      keeper,
      uid: user.uid,
      gid: user.gid,
      confinement,
      isolateCommands: this.options.isolateCommands !== false,
      enterHelper: host.enterHelper ?? undefined,
      spawner,
      env: { ...baseEnvironment(SANDBOX_HOME), ...(spec.env ?? {}) },
      proxyUrl: socket ? `http://127.0.0.1:${port}` : undefined,
    });
  }
}

function hiddenFor(spec: SandboxSpec): { path: string; kind: "dir" | "file" }[] {
  const out: { path: string; kind: "dir" | "file" }[] = [];
  for (const p of spec.hidePaths ?? []) {
    let info;
    try {
      info = lstatSync(p);
    } catch {
      continue;
    }
    if (!info.isSymbolicLink()) out.push({ path: path.resolve(p), kind: info.isDirectory() ? "dir" : "file" });
  }
  return out;
}
