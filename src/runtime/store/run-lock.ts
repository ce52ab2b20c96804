/**
 * The run directory's lock: one process writes a run at a time. `run.lock` names its holder (pid,
 * the process's start time, host, command); a second process is refused with that name. A lock
 * whose holder is gone (killed, crashed: its pid is dead or now another process's) is taken over,
 * so `--resume` after `kill -9` works.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { ReinsError } from "../../compiler/index.js";
import { diskFullOr } from "./disk-full.js";

interface Holder {
  pid: number;
  /** The process's start time in clock ticks after boot (/proc/<pid>/stat field 22); null elsewhere. */
  started: number | null;
  host: string;
  command: string;
  since: string;
}

export const LOCK_FILE = "run.lock";

export interface RunLock {
  release(): void;
}

/** Take the lock of `dir` for this process, or throw RunLocked naming the live holder. */
export function lockRun(dir: string): RunLock {
  const file = join(dir, LOCK_FILE);
  const me: Holder = {
    pid: process.pid,
    started: startTimeOf(process.pid),
    host: hostname(),
    command: process.argv.slice(2).join(" "),
    since: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, "wx");
      try {
        writeSync(fd, `${JSON.stringify(me)}\n`);
      } catch (err) {
        // A full disk: no half-written lock is left behind.
        closeSync(fd);
        unlinkSync(file);
        throw diskFullOr(err, file, dir);
      }
      closeSync(fd);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          if (readHolder(file)?.pid === me.pid) unlinkSync(file);
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw diskFullOr(err, file, dir);
    }
    const holder = readHolder(file);
    if (holder && isAlive(holder)) {
      const who = holder.pid === process.pid ? "this process" : `process ${holder.pid}${holder.command ? ` (reins ${holder.command})` : ""}`;
      throw new ReinsError(
        "RunLocked",
        `${dir} is being written by ${who} since ${holder.since}.`,
        "Wait for that run to end, or stop it (Ctrl-C); a lock left by a process that died is taken over by the next resume.",
      );
    }
    unlinkSync(file); // the holder is gone: take the lock over
  }
  throw new ReinsError("RunLocked", `${dir}: another process took its lock at the same moment.`, "Start only one reins process per run directory.");
}

function readHolder(file: string): Holder | undefined {
  try {
    const h = JSON.parse(readFileSync(file, "utf8")) as Holder;
    return typeof h?.pid === "number" ? h : undefined;
  } catch {
    return undefined; // unreadable: a torn write by a process that died
  }
}

function isAlive(h: Holder): boolean {
  if (h.host !== hostname()) return true; // another machine's process: cannot tell, keep it
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  // The pid lives; it is the holder only if it is the same process (not a reused pid).
  return h.started === null || startTimeOf(h.pid) === h.started;
}

function startTimeOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[19]);
  } catch {
    return null;
  }
}
