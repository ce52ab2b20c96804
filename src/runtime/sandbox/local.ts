/**
 * The `local` provider (the embedded default): Linux namespaces through bubblewrap.
 *
 * A sandbox is a "keeper" bwrap process that holds a mount, pid, network, ipc and uts namespace;
 * commands join those namespaces with nsenter, each in a pid namespace of its own. Destroying the
 * sandbox kills the keeper's pid 1, and the kernel then kills every process in the sandbox: there
 * is no way to outlive it (setsid, nohup and ignored SIGTERM do not help).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  baseEnvironment,
  DEFAULT_PROXY_PORT,
  networkOf,
  SANDBOX_GID,
  SANDBOX_HOME,
  SANDBOX_UID,
  SANDBOX_WORKSPACE,
  type Sandbox,
  type SandboxProvider,
  type SandboxSpec,
} from "./provider.js";
import { SandboxError, messageOf } from "./sandbox-error.js";
import {
  buildKeeperArgs,
  buildKeeperScript,
  nodeForwarder,
  socatForwarder,
  type KeeperLayout,
} from "./local-args.js";
import { ownerStamp, prepareLocalHost, type LocalHost } from "./local-host.js";
import { LocalSandbox, type LocalSandboxState } from "./local-sandbox.js";

export interface LocalProviderOptions {
  /** Where sandbox state (workspace, HOME, /tmp) lives; default $TMPDIR/reins-sandboxes. Hidden from sandboxes. */
  rootDir?: string;
  uid?: number;
  gid?: number;
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
}

function safeName(id: string): string {
  return id.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 60) || "sandbox";
}

export class LocalSandboxProvider implements SandboxProvider {
  readonly type = "local" as const;
  readonly rootDir: string;
  private readonly uid: number;
  private readonly gid: number;
  private host: Promise<LocalHost> | null = null;
  private readonly live = new Set<LocalSandbox>();
  private readonly stamp = `${ownerStamp() ?? process.pid}\n`;

  constructor(private readonly options: LocalProviderOptions = {}) {
    this.rootDir = path.resolve(options.rootDir ?? path.join(os.tmpdir(), "reins-sandboxes"));
    this.uid = options.uid ?? SANDBOX_UID;
    this.gid = options.gid ?? SANDBOX_GID;
  }

  private prepare(): Promise<LocalHost> {
    if (!this.host) {
      this.host = prepareLocalHost(
        this.rootDir,
        this.uid,
        this.gid,
        SANDBOX_HOME,
        this.options.hidePaths ?? [],
        this.options.systemDirs,
      );
      this.host.catch(() => (this.host = null));
    }
    return this.host;
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    let host: LocalHost;
    try {
      host = await this.prepare();
    } catch (error) {
      throw new SandboxError("create-failed", spec.id, `cannot prepare the sandbox root ${this.rootDir}: ${messageOf(error)}`, "check that the directory is writable", { cause: error });
    }
    if (!host.bwrap) {
      throw new SandboxError("create-failed", spec.id, "bubblewrap (bwrap) is not installed", "install it: apt-get install -y bubblewrap");
    }
    const network = networkOf(spec);
    if (network === "proxy-only") {
      if (!spec.proxySocketPath) {
        throw new SandboxError("create-failed", spec.id, "network proxy-only needs proxySocketPath on the local provider", "pass the proxy's per-rollout Unix socket (see createSocketBridge)");
      }
      const info = lstatOrNull(spec.proxySocketPath);
      if (!info?.isSocket()) {
        throw new SandboxError("create-failed", spec.id, `proxy socket ${spec.proxySocketPath} does not exist`, "create the socket (createSocketBridge) before the sandbox");
      }
    }
    // Synchronous: a handful of small syscalls, cheaper than hops through the thread pool.
    const stateDir = mkdtempSync(path.join(this.rootDir, `${safeName(spec.id)}-`));
    try {
      writeFileSync(path.join(stateDir, "owner"), this.stamp);
      return await this.startKeeper(spec, host, stateDir, network);
    } catch (error) {
      await rm(stateDir, { recursive: true, force: true }).catch(() => undefined);
      if (error instanceof SandboxError) throw error;
      throw new SandboxError("create-failed", spec.id, `cannot start the sandbox: ${messageOf(error)}`, "", { cause: error });
    }
  }

  private async startKeeper(spec: SandboxSpec, host: LocalHost, stateDir: string, network: "proxy-only" | "none"): Promise<Sandbox> {
    const dirs = { workspace: path.join(stateDir, "workspace"), home: path.join(stateDir, "home"), tmp: path.join(stateDir, "tmp") };
    for (const dir of Object.values(dirs)) {
      mkdirSync(dir);
      chownSync(dir, this.uid, this.gid);
    }
    chmodSync(dirs.tmp, 0o1777);
    const port = spec.proxyPort ?? DEFAULT_PROXY_PORT;
    const useSocat = this.options.forwarder === "socat" || (this.options.forwarder !== "node" && host.socat !== null);
    if (network === "proxy-only" && this.options.forwarder === "socat" && !host.socat) {
      throw new SandboxError("create-failed", spec.id, "socat is not installed", "install it (apt-get install -y socat) or use forwarder: node");
    }
    const forwarder = network !== "proxy-only" ? null : useSocat ? socatForwarder(host.socat as string, port) : nodeForwarder(port);
    const layout: KeeperLayout = {
      hostEntries: host.hostEntries,
      hide: [...host.hide, ...hiddenFor(spec)],
      emptyFile: host.emptyFile,
      passwdFile: host.passwdFile,
      groupFile: host.groupFile,
      workspaceHost: dirs.workspace,
      homeHost: dirs.home,
      tmpHost: dirs.tmp,
      workspacePath: SANDBOX_WORKSPACE,
      homePath: SANDBOX_HOME,
      mounts: (spec.mounts ?? []).map((m) => ({ hostPath: m.hostPath, sandboxPath: m.sandboxPath, readOnly: m.readOnly !== false })),
      proxySocketHost: network === "proxy-only" ? spec.proxySocketPath : undefined,
      forwarderNodeHost: forwarder && !useSocat ? process.execPath : undefined,
      hostname: "sandbox",
      network,
    };
    const args = [...buildKeeperArgs(layout), "--", "/bin/sh", "-c", buildKeeperScript(forwarder, port)];
    const keeper = spawn(host.bwrap as string, args, { env: {}, stdio: ["ignore", "pipe", "pipe", "pipe"] });
    const childPid = await awaitKeeper(keeper, spec.id, this.options.readyTimeoutMs ?? 30_000);
    const state: LocalSandboxState = {
      spec,
      stateDir,
      dirs,
      keeper,
      childPid,
      uid: this.uid,
      gid: this.gid,
      isolateCommands: this.options.isolateCommands !== false,
      env: { ...baseEnvironment(SANDBOX_HOME), ...(spec.env ?? {}) },
      proxyUrl: network === "proxy-only" ? `http://127.0.0.1:${port}` : undefined,
    };
    const sandbox = new LocalSandbox(state, () => this.live.delete(sandbox));
    this.live.add(sandbox);
    return sandbox;
  }

  async close(): Promise<void> {
    await Promise.all([...this.live].map((s) => s.destroy()));
  }
}

function lstatOrNull(p: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

function hiddenFor(spec: SandboxSpec): { path: string; kind: "dir" | "file" }[] {
  const out: { path: string; kind: "dir" | "file" }[] = [];
  for (const p of spec.hidePaths ?? []) {
    const info = lstatOrNull(p);
    if (info && !info.isSymbolicLink()) out.push({ path: path.resolve(p), kind: info.isDirectory() ? "dir" : "file" });
  }
  return out;
}

/** Reads bwrap's info JSON (fd 3) for the sandbox's pid 1, then waits for the keeper's "ready". */
function awaitKeeper(keeper: ChildProcess, id: string, timeoutMs: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let info = "";
    let out = "";
    let err = "";
    let childPid = 0;
    let ready = false;
    let done = false;
    const fail = (kind: "create-failed" | "timeout", message: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      keeper.kill("SIGKILL");
      if (childPid) {
        try {
          process.kill(childPid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
      reject(new SandboxError(kind, id, message, kind === "timeout" ? "the machine may be overloaded; lower the concurrency" : "see the message from bubblewrap"));
    };
    const check = (): void => {
      if (done || !ready || !childPid) return;
      done = true;
      clearTimeout(timer);
      keeper.stdout?.removeAllListeners("data");
      keeper.stdout?.resume();
      resolve(childPid);
    };
    const timer = setTimeout(() => fail("timeout", `sandbox not ready after ${timeoutMs} ms`), timeoutMs);
    const infoStream = keeper.stdio[3] as NodeJS.ReadableStream | null;
    infoStream?.on("data", (chunk: Buffer) => {
      info += chunk.toString();
      const m = /"child-pid"\s*:\s*(\d+)/.exec(info);
      if (m) {
        childPid = Number(m[1]);
        check();
      }
    });
    keeper.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("ready\n")) {
        ready = true;
        check();
      }
    });
    keeper.stderr?.on("data", (chunk: Buffer) => {
      if (err.length < 4096) err += chunk.toString();
    });
    keeper.on("error", (error) => fail("create-failed", `cannot run bwrap: ${error.message}`));
    keeper.on("exit", (code, signal) => {
      setImmediate(() => fail("create-failed", `bwrap exited (${signal ?? code}) before the sandbox was ready: ${err.trim() || "no message"}`));
    });
  });
}
