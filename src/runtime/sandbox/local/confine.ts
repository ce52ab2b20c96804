/**
 * Pure builders of the confining shell that stands before every process of a local sandbox (its
 * keeper and each command): on the host, as root, it mounts the sandbox's size-capped filesystems
 * where they are host mounts (keeper only), joins the sandbox's control groups, sets its rlimits,
 * then execs the rest. Nothing of the sandbox runs before it is confined, and everything it starts
 * inherits the groups and limits. Also the fstab of capped roots mounted on the host.
 */
import type { Limits } from "../layout.js";

export interface Confinement {
  /** Control group files to join by writing "0" (the shell itself) to each (see host/cgroups.ts). */
  joins: string[];
  limits: Limits;
  /** Which limits the rlimits must carry because no cgroup or tmpfs does. */
  fallback: { memory: boolean; disk: boolean };
  /** RLIMIT_NPROC = pids: only meaningful (and only set) when the sandbox has a uid of its own. */
  ownUid: boolean;
  /** An fstab of the size-capped host mounts to make first (keeper only). */
  fstab?: string;
}

/** One rlimit a confinement sets (hard = soft): count, CPU seconds or bytes. */
export interface RlimitValue {
  name: "nofile" | "cpu" | "as" | "fsize" | "nproc";
  value: number;
}

/**
 * The rlimits of a confinement: open files and CPU seconds always; address space and file size
 * where no group or tmpfs holds memory or disk; processes only for a uid of the sandbox's own.
 */
export function rlimitsOf(c: Confinement): RlimitValue[] {
  const out: RlimitValue[] = [
    { name: "nofile", value: c.limits.openFiles },
    { name: "cpu", value: c.limits.cpuSeconds },
  ];
  if (c.fallback.memory) out.push({ name: "as", value: c.limits.memoryMiB * 1024 * 1024 });
  if (c.fallback.disk) out.push({ name: "fsize", value: c.limits.diskMiB * 1024 * 1024 });
  if (c.ownUid) out.push({ name: "nproc", value: c.limits.pids });
  return out;
}

/** dash's ulimit flag and unit for each rlimit (-v in KiB, -f in 512-byte blocks). */
const ULIMIT: Record<RlimitValue["name"], { flag: string; unit: number }> = {
  nofile: { flag: "-n", unit: 1 },
  cpu: { flag: "-t", unit: 1 },
  as: { flag: "-v", unit: 1024 },
  fsize: { flag: "-f", unit: 512 },
  nproc: { flag: "-p", unit: 1 },
};

/** The rlimits as lines for dash's ulimit. */
export function ulimitLines(c: Confinement): string[] {
  return rlimitsOf(c).map((r) => `ulimit ${ULIMIT[r.name].flag} ${Math.floor(r.value / ULIMIT[r.name].unit)}`);
}

/** `/bin/sh -c <script> reins-confine <fstab|""> <n> <joins...> <argv...>`. */
export function buildConfineArgv(c: Confinement, argv: string[]): string[] {
  const script = [
    `if [ -n "$1" ]; then /usr/bin/mount -a -T "$1" || exit 125; fi`,
    `n=$2; shift 2`,
    `while [ "$n" -gt 0 ]; do echo 0 >"$1" || exit 125; shift; n=$((n-1)); done`,
    ...ulimitLines(c).map((l) => `${l} || exit 125`),
    `exec "$@"`,
  ].join("\n");
  return ["/bin/sh", "-c", script, "reins-confine", c.fstab ?? "", String(c.joins.length), ...c.joins, ...argv];
}

/**
 * The fstab of a sandbox's writable roots: one tmpfs each for the workspace, HOME and /tmp, capped
 * at `diskMiB` and at a number of files in proportion, owned by the sandbox user.
 */
export function buildStateFstab(dirs: { workspace: string; home: string; tmp: string }, diskMiB: number, uid: number, gid: number): string {
  const inodes = Math.max(4096, diskMiB * 128);
  const common = `size=${diskMiB}m,nr_inodes=${inodes},uid=${uid},gid=${gid},nosuid,nodev`;
  const line = (dir: string, mode: string): string => `tmpfs ${dir.replace(/ /g, "\\040")} tmpfs ${common},mode=${mode} 0 0`;
  return `${[line(dirs.workspace, "0755"), line(dirs.home, "0755"), line(dirs.tmp, "1777")].join("\n")}\n`;
}
