/**
 * File access to a sandbox's writable directories from the host side, safe against what the
 * sandbox may have left there: a symlink or a swapped directory never leads the host outside the
 * sandbox's own roots.
 */
import { constants } from "node:fs";
import { lstat, mkdir, open, readdir, realpath, chown } from "node:fs/promises";
import path from "node:path";

export interface HostRoot {
  /** In-sandbox absolute path, e.g. "/workspace". */
  sandboxPath: string;
  /** The same directory on the host. */
  hostPath: string;
}

export interface Owner {
  uid: number;
  gid: number;
}

/** Splits an in-sandbox path into a root and a relative POSIX path; null when outside every root. */
export function locateInRoots(p: string, roots: HostRoot[]): { root: HostRoot; rel: string } | null {
  const workspace = roots[0];
  const abs = p.startsWith("/") ? path.posix.normalize(p) : path.posix.join(workspace.sandboxPath, p);
  for (const root of roots) {
    if (abs === root.sandboxPath) return { root, rel: "" };
    if (abs.startsWith(root.sandboxPath + "/")) {
      const rel = abs.slice(root.sandboxPath.length + 1);
      if (rel.split("/").includes("..")) return null;
      return { root, rel };
    }
  }
  return null;
}

async function ensureDirs(base: string, parts: string[], owner?: Owner): Promise<string> {
  let current = base;
  for (const part of parts) {
    current = path.join(current, part);
    let info;
    try {
      info = await lstat(current);
    } catch {
      await mkdir(current, { mode: 0o755 });
      if (owner) await chown(current, owner.uid, owner.gid);
      continue;
    }
    if (!info.isDirectory()) throw new Error(`${current} is not a directory`);
  }
  return current;
}

/** Writes one file under `base`, never following a symlink the sandbox may have planted. */
export async function writeInside(
  base: string,
  rel: string,
  content: string | Uint8Array,
  mode: number,
  owner?: Owner,
): Promise<void> {
  const parts = rel.split("/").filter((s) => s.length > 0 && s !== ".");
  if (parts.length === 0 || parts.includes("..")) throw new Error(`invalid file path "${rel}"`);
  const dir = await ensureDirs(base, parts.slice(0, -1), owner);
  const target = path.join(dir, parts[parts.length - 1]);
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW;
  const handle = await open(target, flags, mode);
  try {
    await handle.writeFile(content);
    await handle.chmod(mode);
    if (owner) await handle.chown(owner.uid, owner.gid);
  } finally {
    await handle.close();
  }
}

async function insideReal(base: string, target: string): Promise<string> {
  const realBase = await realpath(base);
  const realTarget = await realpath(target);
  if (realTarget !== realBase && !realTarget.startsWith(realBase + "/")) {
    throw new Error(`"${target}" leads outside the sandbox`);
  }
  return realTarget;
}

export async function readInside(base: string, rel: string): Promise<Buffer> {
  const real = await insideReal(base, path.join(base, rel));
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new Error(`"${rel}" is not a regular file`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** Regular files under base/rel (symlinks are neither followed nor listed), sorted. */
export async function listInside(base: string, rel: string): Promise<string[]> {
  const start = await insideReal(base, path.join(base, rel));
  const out: string[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    for (const e of entries) {
      const relPath = prefix ? `${prefix}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path.join(dir, e.name), relPath);
      else if (e.isFile()) out.push(relPath);
    }
  };
  await walk(start, "");
  return out.sort();
}
