/**
 * Host-side process bookkeeping from /proc (no cgroups here): parents, descendants, process
 * groups, liveness, and killing a whole tree, including setsid'd daemons that still carry a
 * run's marker in their environment.
 */
import { readdirSync, readFileSync } from "node:fs";

export interface ProcStat {
  pid: number;
  ppid: number;
  pgid: number;
  state: string;
  /** Kernel task flags (PF_EXITING = 0x4 while the process is being torn down). */
  flags: number;
}

const PF_EXITING = 0x4;

/** The environment variable whose value marks every process of one host command. */
export const MARKER_VAR = "REINS_EXEC_MARKER";

/** Parses /proc/<pid>/stat; the command name may contain spaces and parentheses. */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  const rest = text.slice(close + 2).split(" ");
  const state = rest[0] ?? "";
  const ppid = Number(rest[1]);
  const pgid = Number(rest[2]);
  const flags = Number(rest[6]);
  if (!Number.isInteger(pid) || !Number.isInteger(ppid)) return null;
  return { pid, ppid, pgid: Number.isInteger(pgid) ? pgid : 0, state, flags: Number.isInteger(flags) ? flags : 0 };
}

function readStat(pid: number): ProcStat | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return null;
  }
}

/** Every process that is not a zombie. */
function readProcs(): ProcStat[] {
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return [];
  }
  const out: ProcStat[] = [];
  for (const name of names) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const stat = readStat(Number(name));
    if (stat && stat.state !== "Z") out.push(stat);
  }
  return out;
}

function childrenOf(procs: ProcStat[]): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const p of procs) {
    const list = children.get(p.ppid);
    if (list) list.push(p.pid);
    else children.set(p.ppid, [p.pid]);
  }
  return children;
}

/** True while the process exists, is not a zombie and is not exiting. */
export function isProcessAlive(pid: number): boolean {
  const stat = readStat(pid);
  return stat !== null && stat.state !== "Z" && stat.state !== "X" && (stat.flags & PF_EXITING) === 0;
}

/** Every live descendant of `root` with its depth (1 = child), parents before children. */
export function listDescendants(root: number): { pid: number; depth: number }[] {
  const children = childrenOf(readProcs());
  const out: { pid: number; depth: number }[] = [];
  const queue = [{ pid: root, depth: 0 }];
  while (queue.length > 0) {
    const { pid, depth } = queue.shift() as { pid: number; depth: number };
    for (const child of children.get(pid) ?? []) {
      out.push({ pid: child, depth: depth + 1 });
      queue.push({ pid: child, depth: depth + 1 });
    }
  }
  return out;
}

function hasMarker(pid: number, marker: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, "latin1").includes(`${MARKER_VAR}=${marker}\0`);
  } catch {
    return false;
  }
}

/**
 * Pids of the tree rooted at `root` (itself, its process group, its descendants, processes with
 * the marker), never the runner itself. Once `root` has exited its pid may be reused, so then only
 * marked processes count.
 */
export function findHostTree(root: number, marker?: string, rootAlive = true): number[] {
  const procs = readProcs();
  const found = new Set<number>();
  if (rootAlive) {
    const children = childrenOf(procs);
    const stack = [root];
    while (stack.length > 0) {
      const pid = stack.pop() as number;
      if (found.has(pid)) continue;
      found.add(pid);
      stack.push(...(children.get(pid) ?? []));
    }
    for (const p of procs) if (p.pgid === root) found.add(p.pid);
  }
  if (marker) for (const p of procs) if (!found.has(p.pid) && hasMarker(p.pid, marker)) found.add(p.pid);
  found.delete(process.pid);
  return [...found];
}

/** Freezes the tree (so nothing forks away), re-scans, then SIGKILLs all of it. Returns the pids. */
export function killHostTree(root: number, marker?: string, rootAlive = true): number[] {
  if (rootAlive) signalQuietly(-root);
  const all = new Set<number>();
  for (let round = 0; round < 5; round++) {
    const pids = findHostTree(root, marker, rootAlive).filter((p) => !all.has(p));
    if (pids.length === 0) break;
    for (const pid of pids) signalQuietly(pid, "SIGSTOP");
    for (const pid of pids) all.add(pid);
  }
  for (const pid of all) signalQuietly(pid);
  return [...all];
}

export function signalQuietly(pid: number, signal: NodeJS.Signals = "SIGKILL"): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* already gone */
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls until the process is gone or a zombie; false if it is still alive after `timeoutMs`. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let delay = 2;
  while (isProcessAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(delay);
    delay = Math.min(delay * 2, 50);
  }
  return true;
}
