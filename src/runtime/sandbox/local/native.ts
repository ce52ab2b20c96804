/**
 * The local provider's two small C programs, next to this file: enter.c (the one-process way into
 * a sandbox: control groups, rlimits, namespaces, the command's own pid namespace, the sandbox
 * user) and spawn.c (starts keepers and commands so the runner never forks itself: spawner.ts).
 * Without them a command passes through five programs (the confining shell, nsenter, unshare,
 * setpriv and an init shell), each a spawn, and every spawn forks the runner: together about
 * four times what a bare process costs, and an event loop blocked for ~1 ms per 50 MB the runner
 * holds.
 *
 * Each is compiled with the host's C compiler, once per source (its hash names the binary), into
 * reins's cache (`$REINS_CACHE/native`, else `$XDG_CACHE_HOME/reins/native`, else
 * `~/.cache/reins/native`). They run as the runner (root, for sandboxes with uids of their own),
 * so a binary is used only when it and its directory belong to the runner and nobody else can
 * write them. Where no compiler is found or a build fails, the provider starts its processes
 * itself, through the chain of programs (keeper-args.ts buildEnterArgv, confine.ts).
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { findExecutable } from "../host/executables.js";

export type NativeProgram = "enter" | "spawn";

export function nativeCacheDir(env: Record<string, string | undefined> = process.env, home: string = os.homedir()): string {
  if (env.REINS_CACHE) return path.join(path.resolve(env.REINS_CACHE), "native");
  if (env.XDG_CACHE_HOME) return path.join(path.resolve(env.XDG_CACHE_HOME), "reins", "native");
  return path.join(home, ".cache", "reins", "native");
}

/** Owned by this process's user, not a link, and writable by nobody else. */
function privateTo(file: string, uid: number): boolean {
  try {
    const info = lstatSync(file);
    return info.uid === uid && (info.mode & 0o022) === 0 && !info.isSymbolicLink();
  } catch {
    return false;
  }
}

function compile(cc: string, source: string, out: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(cc, ["-O2", "-o", out, source], { timeout: 120_000 }, (error) => resolve(error === null));
  });
}

const built = new Map<string, Promise<string | null>>();

/** The program's binary, built if needed; null where it cannot be (no compiler, a failed build, a cache others can write). */
export function nativeProgram(name: NativeProgram, cacheDir: string = nativeCacheDir()): Promise<string | null> {
  const key = `${cacheDir}\0${name}`;
  let found = built.get(key);
  if (!found) {
    found = buildProgram(name, cacheDir);
    built.set(key, found);
  }
  return found;
}

async function buildProgram(name: NativeProgram, cacheDir: string): Promise<string | null> {
  const uid = process.geteuid?.() ?? -1;
  const source = fileURLToPath(new URL(`./${name}.c`, import.meta.url));
  let text: Buffer;
  try {
    text = readFileSync(source);
  } catch {
    return null;
  }
  const binary = path.join(cacheDir, `reins-${name}-${createHash("sha256").update(text).digest("hex").slice(0, 16)}`);
  try {
    mkdirSync(cacheDir, { recursive: true, mode: 0o755 });
  } catch {
    return null;
  }
  if (!privateTo(cacheDir, uid)) return null;
  if (privateTo(binary, uid)) return binary;
  const cc = findExecutable("cc") ?? findExecutable("gcc");
  if (!cc) return null;
  const temp = `${binary}.${process.pid}.tmp`;
  if (!(await compile(cc, source, temp))) {
    rmSync(temp, { force: true });
    return null;
  }
  chmodSync(temp, 0o755);
  renameSync(temp, binary);
  return privateTo(binary, uid) ? binary : null;
}
