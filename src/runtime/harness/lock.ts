/**
 * A directory lock shared by processes on one machine: `mkdir` is atomic, so whoever creates the
 * lock directory owns it. A lock whose owner process is gone (or that is older than `staleMs`) is
 * taken over, so a killed installer never blocks the next one forever.
 */
import { mkdir, readFile, rm, writeFile, stat } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";

export interface LockOptions {
  /** Give up waiting after this long. */
  timeoutMs: number;
  /** A lock held longer than this is considered abandoned. */
  staleMs: number;
  pollMs?: number;
}

interface LockOwner {
  pid: number;
  host: string;
  since: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function readOwner(lockDir: string): Promise<LockOwner | null> {
  try {
    return JSON.parse(await readFile(path.join(lockDir, "owner.json"), "utf8")) as LockOwner;
  } catch {
    return null;
  }
}

async function isAbandoned(lockDir: string, staleMs: number): Promise<boolean> {
  const owner = await readOwner(lockDir);
  if (owner === null) {
    // The owner may be between mkdir and writing owner.json; only old ownerless locks are abandoned.
    const info = await stat(lockDir).catch(() => null);
    return info !== null && Date.now() - info.mtimeMs > 10_000;
  }
  if (Date.now() - owner.since > staleMs) return true;
  return owner.host === hostname() && !isAlive(owner.pid);
}

/** Runs `fn` while holding the lock; returns null when the lock could not be had in time. */
export async function withLock<T>(lockDir: string, options: LockOptions, fn: () => Promise<T>): Promise<{ value: T } | null> {
  const deadline = Date.now() + options.timeoutMs;
  await mkdir(path.dirname(lockDir), { recursive: true });
  for (;;) {
    try {
      await mkdir(lockDir);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    if (await isAbandoned(lockDir, options.staleMs)) {
      await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) return null;
    await sleep(options.pollMs ?? 500);
  }
  const owner: LockOwner = { pid: process.pid, host: hostname(), since: Date.now() };
  await writeFile(path.join(lockDir, "owner.json"), JSON.stringify(owner));
  try {
    return { value: await fn() };
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
}
