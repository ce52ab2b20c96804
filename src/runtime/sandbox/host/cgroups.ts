/**
 * Per-sandbox control groups on this host: a pids, memory and cpu group for each sandbox, made
 * under the runner's own group of each controller (so a runner confined by its caller stays
 * confined), in a `reins` directory of its own. cgroup v1 controllers are used where they are
 * mounted writable; on a pure cgroup v2 host, a v2 group with the pids, memory and cpu controllers
 * where the runner's parent group delegates them. Where neither is writable there are no groups and
 * the sandbox relies on its rlimits (see local/confine.ts).
 *
 * A sandbox's processes join its groups before anything of theirs runs (the confining shell
 * writes "0", itself, to each group's join file, then execs); the kernel counts every process they
 * start. Destroying the groups kills whatever is still in them.
 *
 * The join file is a v1 group's `tasks`, not its `cgroup.procs`: a thread moving itself through
 * `tasks` is the one move the kernel makes without the global threadgroup lock, whose writer waits
 * for an RCU grace period (several milliseconds, more on a loaded host) on every first move of a
 * burst. The confining shell is single-threaded, so moving its thread moves the whole process.
 */
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { rmdir } from "node:fs/promises";
import path from "node:path";
import type { Limits } from "../layout.js";
import { signalQuietly, sleep } from "./process-tree.js";

export type CgroupController = "pids" | "memory" | "cpu";

export interface CgroupHost {
  version: 1 | 2;
  /** The directory under which each sandbox gets a group, per controller (v2: one directory for all). */
  parents: Partial<Record<CgroupController, string>>;
}

export interface SandboxCgroups {
  /** The groups' directories (removed at destroy). */
  dirs: string[];
  /** The files a single-threaded process writes "0" to, to join (v1 `tasks`, v2 `cgroup.procs`). */
  joins: string[];
  controllers: CgroupController[];
}

interface Mount {
  point: string;
  root: string;
  fsType: string;
  options: string[];
}

function readMounts(): Mount[] {
  let text = "";
  try {
    text = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return [];
  }
  const out: Mount[] = [];
  for (const line of text.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const f = left.split(" ");
    const r = right.split(" ");
    out.push({ root: f[3], point: f[4].replace(/\\040/g, " "), fsType: r[0], options: (r[2] ?? "").split(",") });
  }
  return out;
}

/** controller (or "" for v2) → the runner's group path, from /proc/self/cgroup. */
function ownGroups(): Map<string, string> {
  const out = new Map<string, string>();
  let text = "";
  try {
    text = readFileSync("/proc/self/cgroup", "utf8");
  } catch {
    return out;
  }
  for (const line of text.trim().split("\n")) {
    const first = line.indexOf(":");
    const second = line.indexOf(":", first + 1);
    const controllers = line.slice(first + 1, second);
    const group = line.slice(second + 1);
    for (const c of controllers === "" ? [""] : controllers.split(",")) out.set(c, group);
  }
  return out;
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where this host lets the runner make sandbox groups; null when nowhere (not root, read-only cgroupfs). */
export function detectCgroups(): CgroupHost | null {
  if (process.getuid?.() !== 0) return null;
  const mounts = readMounts();
  const own = ownGroups();
  const parents: CgroupHost["parents"] = {};
  for (const c of ["pids", "memory", "cpu"] as CgroupController[]) {
    const m = mounts.find((x) => x.fsType === "cgroup" && x.options.includes(c));
    const group = own.get(c);
    if (!m || group === undefined) continue;
    const rel = path.posix.relative(m.root, group);
    if (rel.startsWith("..")) continue;
    const dir = path.join(m.point, rel);
    if (writable(dir)) parents[c] = path.join(dir, "reins");
  }
  if (Object.keys(parents).length > 0) return { version: 1, parents };
  // cgroup v2: the runner's group holds the runner, so sandboxes go beside it, in its parent, when
  // that parent delegates the controllers to its children.
  const unified = mounts.find((x) => x.fsType === "cgroup2");
  const group = own.get("");
  if (!unified || group === undefined) return null;
  const parent = path.join(unified.point, path.posix.relative(unified.root, path.posix.dirname(group)));
  let enabled: string[] = [];
  try {
    enabled = readFileSync(path.join(parent, "cgroup.subtree_control"), "utf8").trim().split(/\s+/);
  } catch {
    return null;
  }
  const controllers = (["pids", "memory", "cpu"] as CgroupController[]).filter((c) => enabled.includes(c));
  if (controllers.length === 0 || !writable(parent)) return null;
  const reins = path.join(parent, "reins");
  try {
    mkdirSync(reins, { recursive: true });
    writeFileSync(path.join(reins, "cgroup.subtree_control"), controllers.map((c) => `+${c}`).join(" "));
  } catch {
    return null;
  }
  const v2: CgroupHost["parents"] = {};
  for (const c of controllers) v2[c] = reins;
  return { version: 2, parents: v2 };
}

/** The limit files of one group, per controller and cgroup version. */
function limitWrites(version: 1 | 2, c: CgroupController, limits: Limits): [string, string][] {
  const memory = String(limits.memoryMiB * 1024 * 1024);
  const period = 100_000;
  const quota = Math.max(1000, Math.round(limits.cpus * period));
  if (version === 1) {
    if (c === "pids") return [["pids.max", String(limits.pids)]];
    if (c === "memory") return [["memory.limit_in_bytes", memory]];
    return [
      ["cpu.cfs_period_us", String(period)],
      ["cpu.cfs_quota_us", String(quota)],
    ];
  }
  if (c === "pids") return [["pids.max", String(limits.pids)]];
  if (c === "memory")
    return [
      ["memory.max", memory],
      ["memory.swap.max", "0"],
    ];
  return [["cpu.max", `${quota} ${period}`]];
}

/** Makes the groups of one sandbox and sets its limits. The caller records `dirs` before processes join. */
export function createSandboxCgroups(host: CgroupHost, name: string, limits: Limits): SandboxCgroups {
  const out: SandboxCgroups = { dirs: [], joins: [], controllers: [] };
  const made = new Set<string>();
  for (const [c, parent] of Object.entries(host.parents) as [CgroupController, string][]) {
    const dir = path.join(parent, name);
    if (!made.has(dir)) {
      // A concurrent runner may have removed an empty parent just now: make it again.
      mkdirSync(dir, { recursive: true });
      made.add(dir);
      out.dirs.push(dir);
      out.joins.push(path.join(dir, host.version === 1 ? "tasks" : "cgroup.procs"));
    }
    for (const [file, value] of limitWrites(host.version, c, limits)) {
      try {
        writeFileSync(path.join(dir, file), value);
      } catch (error) {
        // memory.swap.max is absent without swap accounting; anything else is a real failure.
        if (file !== "memory.swap.max") throw error;
      }
    }
    out.controllers.push(c);
  }
  return out;
}

function pidsIn(dir: string): number[] {
  try {
    return readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Kills every process still in the groups and removes them, all at once (and, for cgroup v1,
 * their `reins` parent when empty, so that the runner's own group can be removed by whoever made
 * it). Returns false when a group could not be removed within `timeoutMs`.
 */
export async function removeSandboxCgroups(dirs: string[], timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const removed = await Promise.all(dirs.map((dir) => removeGroup(dir, deadline)));
  return removed.every(Boolean);
}

/** One group: removed at once when empty; else what is in it is killed until it is. */
async function removeGroup(dir: string, deadline: number): Promise<boolean> {
  for (let round = 0; ; round++) {
    try {
      await rmdir(dir);
      break;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") break;
      if (Date.now() > deadline) return false;
      for (const pid of pidsIn(dir)) signalQuietly(pid);
      if (round > 0) await sleep(round < 10 ? 2 : 20);
    }
  }
  try {
    // A v2 parent keeps its delegated controllers: it stays.
    if (!existsSync(path.join(path.dirname(dir), "cgroup.subtree_control"))) await rmdir(path.dirname(dir));
  } catch {
    /* other sandboxes' groups are there, or it is gone */
  }
  return true;
}

/**
 * Where runners on this host make sandbox groups: this runner's parents and, for cgroup v1, the
 * `reins` directory in each group beside its own (runners started in sibling groups, e.g. one
 * memory group per job). Only directories that exist.
 */
export function sandboxGroupParents(host: CgroupHost): string[] {
  const out = new Set<string>();
  for (const parent of Object.values(host.parents)) {
    if (existsSync(parent)) out.add(parent);
    const above = path.dirname(path.dirname(parent));
    // Beside the runner's own group only when that group is not the hierarchy's root.
    if (host.version !== 1 || !existsSync(path.join(above, "cgroup.procs"))) continue;
    let siblings: string[] = [];
    try {
      siblings = readdirSync(above, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      continue;
    }
    for (const sibling of siblings) {
      const dir = path.join(above, sibling, "reins");
      if (existsSync(dir)) out.add(dir);
    }
  }
  return [...out];
}

/** The sandbox groups (directories) directly under `parent`. */
export function groupsUnder(parent: string): string[] {
  try {
    return readdirSync(parent, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => path.join(parent, e.name));
  } catch {
    return [];
  }
}

/** The pids hierarchy's mount point on this host (v1 pids controller, else the v2 root). */
function pidsRoot(): string | null {
  const mounts = readMounts();
  const v1 = mounts.find((x) => x.fsType === "cgroup" && x.options.includes("pids"));
  if (v1) return v1.point;
  return mounts.find((x) => x.fsType === "cgroup2")?.point ?? null;
}

/**
 * Sets pids.max on the group whose name contains `id` (a container manager's pod or container id),
 * searched a few levels deep in the pids hierarchy. Returns the group, or null when none is found.
 */
export function limitPidsOf(id: string, pids: number, maxDepth = 4): string | null {
  const root = pidsRoot();
  if (!root || !/^[0-9a-f]{12,}$/.test(id)) return null;
  const walk = (dir: string, depth: number): string | null => {
    let names: string[] = [];
    try {
      names = readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return null;
    }
    const hit = names.find((n) => n.includes(id));
    if (hit) return path.join(dir, hit);
    if (depth >= maxDepth) return null;
    for (const n of names) {
      const found = walk(path.join(dir, n), depth + 1);
      if (found) return found;
    }
    return null;
  };
  const group = walk(root, 1);
  if (!group) return null;
  writeFileSync(path.join(group, "pids.max"), String(pids));
  return group;
}
