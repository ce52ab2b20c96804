/**
 * Who made a piece of sandbox state, so that a later runner can tell what a dead one left from
 * what a live one still uses: the runner's owner stamp ("<pid> <start time>", which a reused pid
 * does not match), written in each state directory, and carried in the name of each sandbox's
 * control groups: `<state directory name>@<pid namespace>.<pid>.<start time>`. A group has no
 * file of its own to say whose it is, and its state directory may be gone (a runner killed with
 * its temporary directory removed), so its name says it. The pid namespace is there because a
 * pid means something only in its own namespace: a group made in another one is never judged.
 */
import { readFileSync, readlinkSync } from "node:fs";
import path from "node:path";

/** "<pid> <start time>" of a process (this one by default); null when there is none. */
export function ownerStamp(pid = process.pid): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    return `${pid} ${start}`;
  } catch {
    return null;
  }
}

/** The file in a sandbox's state directory that holds its runner's stamp (read by pruneStale). */
export const OWNER_FILE = "owner";

/** This runner's stamp as written in OWNER_FILE (its pid alone where /proc cannot give its start). */
export function ownerRecord(): string {
  return `${ownerStamp() ?? process.pid}\n`;
}

/** Whether the runner with this stamp still runs (the same process: same pid, same start time). */
export function isOwnerAlive(stamp: string): boolean {
  const pid = Number(stamp.trim().split(" ")[0]);
  return Number.isInteger(pid) && pid > 0 && ownerStamp(pid) === stamp.trim();
}

let ownNamespace: string | undefined;

/** The inode number of this process's pid namespace ("" where it cannot be read). */
export function pidNamespace(): string {
  if (ownNamespace === undefined) {
    try {
      ownNamespace = /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))?.[1] ?? "";
    } catch {
      ownNamespace = "";
    }
  }
  return ownNamespace;
}

/**
 * The name of the control groups of the sandbox whose state is `stateDir`, made by `stamp`: the
 * directory's name alone where the stamp or the namespace is unknown (such groups are never pruned
 * by name, only with their state directory).
 */
export function groupNameFor(stateDir: string, stamp: string): string {
  const m = /^(\d+) (\d+)$/.exec(stamp.trim());
  const base = path.basename(stateDir);
  return m && pidNamespace() ? `${base}@${pidNamespace()}.${m[1]}.${m[2]}` : base;
}

const GROUP_OWNER = /@(\d+)\.(\d+)\.(\d+)$/;

/**
 * Whether the group named `name` was made by a runner of this pid namespace that no longer runs.
 * False for a live runner's group, for one made in another pid namespace, and for one whose name
 * carries no owner (not a sandbox's group, or made before groups were named so).
 */
export function isDeadRunnersGroup(name: string): boolean {
  const m = GROUP_OWNER.exec(name);
  if (!m || m[1] !== pidNamespace()) return false;
  return !isOwnerAlive(`${m[2]} ${m[3]}`);
}
