/**
 * A sandbox's state directory on the host (local and podman), and everything recorded in it so
 * that whoever removes it (destroy, a failed creation, or the next runner pruning what a crashed
 * one left) finds all of it:
 *   owner            "<pid> <start time>" of the runner that made it
 *   uid              the sandbox's leased host uid (when it has one of its own)
 *   cgroups          its control groups' directories, one a line (written before they are made);
 *                    each group's name carries the owner too (owner.ts), for when this directory
 *                    is gone
 *   fstab            its size-capped host mounts (podman; written before they are mounted)
 *   info             what bwrap tells of the sandbox (local: the host pid of its pid 1)
 *   passwd, group    the host's, plus the sandbox user
 *   workspace/ home/ tmp/   the writable roots, bound into the sandbox (each a tmpfs when capped
 *                    on the host); for a local sandbox with capped roots, which are tmpfs of its
 *                    own mount namespace (roots.ts) and never mounted here, only `workspace`: a
 *                    link to its workspace through /proc, for diagnostics
 */
import { spawn } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { StateDirs } from "../base-provider.js";
import { createSandboxCgroups, removeSandboxCgroups, type CgroupHost, type SandboxCgroups } from "../host/cgroups.js";
import { removeTree } from "../files/host-files.js";
import type { Limits } from "../layout.js";
import { buildStateFstab } from "./confine.js";
import { groupNameFor, ownerStamp } from "./owner.js";
import { releaseUid } from "./uids.js";

export interface SandboxState {
  /** The host directories behind the roots (none for roots capped in the sandbox). */
  dirs?: StateDirs;
  /** Set when the roots are to be mounted on the host as capped tmpfs (by the caller). */
  fstab?: string;
  /** Set when the roots are to be capped tmpfs made in the sandbox: the size of each, in bytes. */
  capBytes?: number;
  cgroups?: SandboxCgroups;
}

/** How the roots are capped at diskMiB: not at all (plain directories), by host mounts, or in the sandbox. */
export type RootsCap = "none" | "host" | "sandbox";

function readLines(file: string): string[] {
  try {
    return readFileSync(file, "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * Lays out one sandbox's state: the roots (mount points for `host` caps, nothing for `sandbox`
 * caps, else owned directories), its control groups with their limits, and the records of both.
 */
export function layOutState(
  stateDir: string,
  o: { uid: number; gid: number; limits: Limits; cap: RootsCap; cgroups: CgroupHost | null; owner?: string },
): SandboxState {
  const state: SandboxState = {};
  if (o.cap === "sandbox") {
    state.capBytes = o.limits.diskMiB * 1024 * 1024;
  } else {
    const dirs = { workspace: path.join(stateDir, "workspace"), home: path.join(stateDir, "home"), tmp: path.join(stateDir, "tmp") };
    for (const dir of Object.values(dirs)) mkdirSync(dir);
    if (o.cap === "host") {
      state.fstab = path.join(stateDir, "fstab");
      writeFileSync(state.fstab, buildStateFstab(dirs, o.limits.diskMiB, o.uid, o.gid));
    } else {
      for (const dir of Object.values(dirs)) chownSync(dir, o.uid, o.gid);
      chmodSync(dirs.tmp, 0o1777);
    }
    state.dirs = dirs;
  }
  if (o.cgroups) {
    const name = groupNameFor(stateDir, o.owner ?? ownerStamp() ?? "");
    writeFileSync(
      path.join(stateDir, "cgroups"),
      `${Object.values(o.cgroups.parents)
        .map((p) => path.join(p, name))
        .join("\n")}\n`,
    );
    state.cgroups = createSandboxCgroups(o.cgroups, name, o.limits);
  }
  return state;
}

function unmount(dirs: string[]): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn("/usr/bin/umount", ["-l", ...dirs], { env: {}, stdio: "ignore" });
    child.on("error", () => resolve());
    child.on("close", () => resolve());
  });
}

/** Mount points under `stateDir` still mounted on this host. */
function mountedUnder(stateDir: string): string[] {
  const prefix = `${stateDir}/`;
  return readLines("/proc/self/mountinfo")
    .map((line) => (line.split(" ")[4] ?? "").replace(/\\040/g, " "))
    .filter((point) => point.startsWith(prefix));
}

/**
 * Removes a directory holding only files and links (a sandbox whose roots are its own holds only
 * the runner's records here) in a few synchronous calls; false, with nothing but such entries
 * removed, when it holds anything else.
 */
function removeFlat(dir: string): boolean {
  try {
    for (const name of readdirSync(dir)) unlinkSync(path.join(dir, name));
    rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes, synchronously, the state of a sandbox that never ran (a spare: spares.ts): its empty
 * groups, its directory and its uid lease. At process exit too, so nothing here may wait.
 */
export function removeStateNow(stateRoot: string, stateDir: string): void {
  const groups = readLines(path.join(stateDir, "cgroups"));
  const uid = Number(readLines(path.join(stateDir, "uid"))[0]);
  for (const dir of groups) {
    try {
      rmdirSync(dir);
    } catch {
      /* gone, or in use: removed with the state below by whoever prunes it */
    }
  }
  try {
    rmSync(stateDir, { recursive: true, force: true });
  } catch {
    return;
  }
  if (Number.isInteger(uid) && uid > 0) releaseUid(stateRoot, uid);
}

/**
 * Removes everything of one sandbox once its processes are dead: kills what is left in its groups
 * and removes them, unmounts its host mounts, releases its uid and removes the directory whatever
 * the sandbox left in it. Returns whether the directory is gone.
 */
export async function removeState(stateRoot: string, stateDir: string): Promise<boolean> {
  const groups = readLines(path.join(stateDir, "cgroups"));
  const uid = Number(readLines(path.join(stateDir, "uid"))[0]);
  const mounted = readLines(path.join(stateDir, "fstab")).length > 0 ? mountedUnder(stateDir) : [];
  let gone: boolean;
  if (mounted.length > 0) {
    // The unmount runs while the groups are removed; the tree goes once nothing is mounted in it.
    await Promise.all([removeSandboxCgroups(groups), unmount(mounted)]);
    gone = await removeTree(stateDir);
  } else {
    // Records read: the directory goes while the groups are removed.
    const groupsGone = removeSandboxCgroups(groups);
    gone = removeFlat(stateDir) || (await removeTree(stateDir));
    await groupsGone;
  }
  if (gone && Number.isInteger(uid) && uid > 0) releaseUid(stateRoot, uid);
  return gone;
}
