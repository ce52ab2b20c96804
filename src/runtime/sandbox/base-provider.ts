/**
 * What every provider does the same way: it keeps the sandboxes it made until they are destroyed
 * (close() destroys the rest), turns any unexpected failure of creation into a `create-failed`
 * SandboxError, and, for providers that run on this host (local, podman), checks the proxy's
 * socket and lays out the state directories behind the workspace, HOME and /tmp.
 */
import { chmodSync, chownSync, lstatSync, mkdirSync } from "node:fs";
import path from "node:path";
import type { BaseSandbox } from "./base-sandbox.js";
import { SANDBOX_HOME, SANDBOX_TMP, SANDBOX_WORKSPACE } from "./layout.js";
import type { Sandbox, SandboxNetwork, SandboxProvider, SandboxProviderType, SandboxSpec } from "./provider.js";
import { messageOf, SandboxError } from "./sandbox-error.js";

export abstract class BaseSandboxProvider implements SandboxProvider {
  abstract readonly type: SandboxProviderType;
  private readonly live = new Set<BaseSandbox>();
  /** Creations under way: close() waits for them, then destroys what they made too. */
  private readonly creating = new Set<Promise<unknown>>();

  /** Makes one sandbox; SandboxErrors pass through, anything else becomes `create-failed`. */
  protected abstract createSandbox(spec: SandboxSpec): Promise<BaseSandbox>;

  async create(spec: SandboxSpec): Promise<Sandbox> {
    const creation = this.createAndKeep(spec);
    const settled = creation.then(
      () => undefined,
      () => undefined,
    );
    this.creating.add(settled);
    void settled.then(() => this.creating.delete(settled));
    return creation;
  }

  private async createAndKeep(spec: SandboxSpec): Promise<Sandbox> {
    let sandbox: BaseSandbox;
    try {
      sandbox = await this.createSandbox(spec);
    } catch (error) {
      if (error instanceof SandboxError) throw error;
      throw new SandboxError("create-failed", spec.id, `cannot create the sandbox: ${messageOf(error)}`, "", { cause: error });
    }
    this.live.add(sandbox);
    sandbox.whenDestroyed(() => this.live.delete(sandbox));
    return sandbox;
  }

  async close(): Promise<void> {
    // A sandbox whose creation ends while closing is destroyed with the others.
    while (this.creating.size > 0) await Promise.all([...this.creating]);
    await Promise.all([...this.live].map((s) => s.destroy().catch(() => undefined)));
  }
}

/**
 * What a provider prepares once on this host (a state root, the podman CLI's settings), made again
 * after a failure; while it fails, creation fails as `create-failed` with `hint`.
 */
export function hostSetup<T>(make: () => Promise<T>, describe: (error: unknown) => string, hint: string): (sandboxId: string) => Promise<T> {
  let made: Promise<T> | null = null;
  return async (sandboxId) => {
    if (!made) {
      made = make();
      made.catch(() => (made = null));
    }
    try {
      return await made;
    } catch (error) {
      throw new SandboxError("create-failed", sandboxId, describe(error), hint, { cause: error });
    }
  };
}

export function networkOf(spec: SandboxSpec): SandboxNetwork {
  if (spec.network) return spec.network;
  return spec.proxySocketPath || spec.proxyUrl ? "proxy-only" : "none";
}

/** The proxy socket a proxy-only sandbox on this host binds in; it must exist and be a socket. */
export function proxySocketFor(spec: SandboxSpec): string | undefined {
  if (networkOf(spec) !== "proxy-only") return undefined;
  let isSocket = false;
  try {
    isSocket = spec.proxySocketPath !== undefined && lstatSync(spec.proxySocketPath).isSocket();
  } catch {
    isSocket = false;
  }
  if (!isSocket) {
    throw new SandboxError(
      "create-failed",
      spec.id,
      `network proxy-only needs an existing proxySocketPath (got ${spec.proxySocketPath ?? "none"})`,
      "create the proxy's per-rollout socket (createSocketBridge) before the sandbox",
    );
  }
  return spec.proxySocketPath;
}

export interface StateDirs {
  workspace: string;
  home: string;
  tmp: string;
}

/** workspace/, home/ and tmp/ under `stateDir`, owned by the sandbox user; tmp is sticky and world-writable. */
export function makeStateDirs(stateDir: string, uid: number, gid: number): StateDirs {
  const dirs = { workspace: path.join(stateDir, "workspace"), home: path.join(stateDir, "home"), tmp: path.join(stateDir, "tmp") };
  for (const dir of Object.values(dirs)) {
    mkdirSync(dir);
    chownSync(dir, uid, gid);
  }
  chmodSync(dirs.tmp, 0o1777);
  return dirs;
}

/** The host directory behind each writable root. */
export function hostDirsOf(dirs: StateDirs): Record<string, string> {
  return { [SANDBOX_WORKSPACE]: dirs.workspace, [SANDBOX_HOME]: dirs.home, [SANDBOX_TMP]: dirs.tmp };
}
