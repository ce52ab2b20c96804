/**
 * Host-side process bookkeeping from /proc (no cgroups here): parents, descendants, liveness.
 */
import { readFileSync, readdirSync } from "node:fs";

interface ProcStat {
  pid: number;
  ppid: number;
  state: string;
  /** Kernel task flags (PF_EXITING = 0x4 while the process is being torn down). */
  flags: number;
}

const PF_EXITING = 0x4;

/** Parses /proc/<pid>/stat; the command name may contain spaces and parentheses. */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  const rest = text.slice(close + 2).split(" ");
  const state = rest[0] ?? "";
  const ppid = Number(rest[1]);
  const flags = Number(rest[6]);
  if (!Number.isInteger(pid) || !Number.isInteger(ppid)) return null;
  return { pid, ppid, state, flags: Number.isInteger(flags) ? flags : 0 };
}

function readStat(pid: number): ProcStat | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return null;
  }
}

/** True while the process exists, is not a zombie and is not exiting. */
export function isProcessAlive(pid: number): boolean {
  const stat = readStat(pid);
  return stat !== null && stat.state !== "Z" && stat.state !== "X" && (stat.flags & PF_EXITING) === 0;
}

/** Every live descendant of `root` with its depth (1 = child), parents before children. */
export function listDescendants(root: number): { pid: number; depth: number }[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  for (const name of entries) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const stat = readStat(Number(name));
    if (!stat || stat.state === "Z") continue;
    const list = children.get(stat.ppid);
    if (list) list.push(stat.pid);
    else children.set(stat.ppid, [stat.pid]);
  }
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
