/**
 * A local sandbox's state directory on the host, and everything recorded in it so that whoever
 * removes it (destroy, a failed creation, or the next runner pruning what a crashed one left)
 * finds all of it:
 *   owner            "<pid> <start time>" of the runner that made it
 *   uid              the sandbox's leased host uid (when it has one of its own)
 *   cgroups          its control groups' directories, one a line (written before they are made)
 *   fstab            its size-capped mounts (written before they are mounted)
 *   passwd, group    the host's, plus the sandbox user
 *   workspace/ home/ tmp/   the writable roots (each a tmpfs when capped)
 */
import { spawn } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { StateDirs } from "../base-provider.js";
import { createSandboxCgroups, removeSandboxCgroups, type CgroupHost, type SandboxCgroups } from "../host/cgroups.js";
import { removeTree } from "../files/host-files.js";
import type { Limits } from "../layout.js";
import { buildStateFstab } from "./confine.js";
import { releaseUid } from "./uids.js";

export interface SandboxState {
  dirs: StateDirs;
  /** Set when the roots are to be mounted as capped tmpfs (by the keeper's confining shell). */
  fstab?: string;
  cgroups?: SandboxCgroups;
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * Lays out one sandbox's state: the roots (mount points when `capDisk`, else owned directories),
 * its control groups with their limits, and the records of both.
 */
export function layOutState(stateDir: string, o: { uid: number; gid: number; limits: Limits; capDisk: boolean; cgroups: CgroupHost | null }): SandboxState {
  const dirs = { workspace: path.join(stateDir, "workspace"), home: path.join(stateDir, "home"), tmp: path.join(stateDir, "tmp") };
  const state: SandboxState = { dirs };
  for (const dir of Object.values(dirs)) mkdirSync(dir);
  if (o.capDisk) {
    state.fstab = path.join(stateDir, "fstab");
    writeFileSync(state.fstab, buildStateFstab(dirs, o.limits.diskMiB, o.uid, o.gid));
  } else {
    for (const dir of Object.values(dirs)) chownSync(dir, o.uid, o.gid);
    chmodSync(dirs.tmp, 0o1777);
  }
  if (o.cgroups) {
    const name = path.basename(stateDir);
    writeFileSync(path.join(stateDir, "cgroups"), Object.values(o.cgroups.parents).map((p) => path.join(p, name)).join("\n") + "\n");
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
  const prefix = stateDir + "/";
  return readLines("/proc/self/mountinfo")
    .map((line) => (line.split(" ")[4] ?? "").replace(/\\040/g, " "))
    .filter((point) => point.startsWith(prefix));
}

/**
 * Removes everything of one sandbox once its processes are dead: kills what is left in its groups
 * and removes them, unmounts its roots, releases its uid and removes the directory whatever the
 * sandbox left in it. Returns whether the directory is gone.
 */
export async function removeState(stateRoot: string, stateDir: string): Promise<boolean> {
  // The unmount runs while the groups are removed: both must be done before the tree goes.
  const mounted = readLines(path.join(stateDir, "fstab")).length > 0 ? mountedUnder(stateDir) : [];
  const unmounted = mounted.length > 0 ? unmount(mounted) : undefined;
  await Promise.all([removeSandboxCgroups(readLines(path.join(stateDir, "cgroups"))), unmounted]);
  const uid = Number(readLines(path.join(stateDir, "uid"))[0]);
  const gone = await removeTree(stateDir);
  if (gone && Number.isInteger(uid) && uid > 0) releaseUid(stateRoot, uid);
  return gone;
}
