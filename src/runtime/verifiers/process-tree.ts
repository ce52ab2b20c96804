/**
 * Run a host command with a deadline and kill its whole process tree: the process group, every
 * descendant found in /proc, and every process that still carries this run's marker in its
 * environment (which catches double-forked, setsid'd daemons). Output is bounded (the tail is kept).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { ExecResult } from "./workspace.js";

export interface ProcessRequest {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes?: number;
}

const DEFAULT_MAX_OUTPUT = 1024 * 1024;
const MARKER_VAR = "REINS_EXEC_MARKER";
/** After the main process exits, how long stray holders of its pipes may keep them open. */
const CLOSE_GRACE_MS = 1000;

class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  constructor(private readonly cap: number) {}
  push(b: Buffer): void {
    this.chunks.push(b);
    this.size += b.length;
    while (this.size > this.cap && this.chunks.length > 0) {
      const first = this.chunks[0];
      const excess = this.size - this.cap;
      this.truncated = true;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
    }
  }
  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
}

function readProcs(): ProcInfo[] {
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return [];
  }
  const out: ProcInfo[] = [];
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = readFileSync(`/proc/${n}/stat`, "utf8");
      // comm may contain spaces and parentheses: fields follow the last ')'.
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.push({ pid: Number(n), ppid: Number(rest[1]), pgid: Number(rest[2]) });
    } catch {
      // process vanished
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
 * Pids of the tree rooted at `root` (its process group, descendants, marked processes), excluding
 * ourselves. Once `root` has exited its pid may be reused, so then only marked processes count.
 */
export function findTree(root: number, marker?: string, rootAlive = true): number[] {
  const procs = readProcs();
  if (!rootAlive) {
    if (!marker) return [];
    return procs.filter((p) => p.pid !== process.pid && hasMarker(p.pid, marker)).map((p) => p.pid);
  }
  const children = new Map<number, number[]>();
  for (const p of procs) {
    const list = children.get(p.ppid) ?? [];
    list.push(p.pid);
    children.set(p.ppid, list);
  }
  const found = new Set<number>();
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (found.has(pid)) continue;
    found.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  for (const p of procs) {
    if (p.pgid === root) found.add(p.pid);
    else if (marker && !found.has(p.pid) && hasMarker(p.pid, marker)) found.add(p.pid);
  }
  found.delete(process.pid);
  return [...found];
}

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Freeze the tree (so it cannot fork away), re-scan, then SIGKILL everything. Returns pids killed. */
export function killTree(root: number, marker?: string, rootAlive = true): number[] {
  if (rootAlive) {
    try {
      process.kill(-root, "SIGKILL");
    } catch {
      // no such group
    }
  }
  const all = new Set<number>();
  for (let round = 0; round < 5; round++) {
    const pids = findTree(root, marker, rootAlive).filter((p) => !all.has(p));
    if (pids.length === 0) break;
    signalAll(pids, "SIGSTOP");
    pids.forEach((p) => all.add(p));
  }
  signalAll([...all], "SIGKILL");
  return [...all];
}

/** Spawn, wait, enforce the deadline; never throws for a bad command. */
export function runProcess(req: ProcessRequest): Promise<ExecResult> {
  const started = Date.now();
  const cap = req.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const stdout = new TailBuffer(cap);
  const stderr = new TailBuffer(cap);
  const marker = randomBytes(8).toString("hex");
  return new Promise((resolve) => {
    let timedOut = false;
    let settled = false;
    const child = spawn(req.argv[0], req.argv.slice(1), {
      cwd: req.cwd,
      env: { ...req.env, [MARKER_VAR]: marker },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (b: Buffer) => stdout.push(b));
    child.stderr!.on("data", (b: Buffer) => stderr.push(b));
    const finish = (exitCode: number | null, signal: string | null, spawnError?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      const result: ExecResult = {
        exitCode: timedOut ? null : exitCode,
        signal,
        timedOut,
        stdout: stdout.text(),
        stderr: stderr.text(),
        outputTruncated: stdout.truncated || stderr.truncated,
        durationMs: Date.now() - started,
      };
      if (spawnError !== undefined) result.spawnError = spawnError;
      resolve(result);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) killTree(child.pid, marker);
    }, req.timeoutMs);
    let graceTimer: NodeJS.Timeout | undefined;
    child.on("error", (e) => finish(null, null, (e as Error).message));
    child.on("exit", (code, signal) => {
      // Whatever the main process left behind dies with it; stray pipe holders get a short grace.
      if (child.pid !== undefined) killTree(child.pid, marker, false);
      graceTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish(code, signal);
      }, CLOSE_GRACE_MS);
    });
    child.on("close", (code, signal) => finish(code, signal));
  });
}
