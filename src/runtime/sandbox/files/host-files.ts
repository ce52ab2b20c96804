/**
 * File access to a sandbox's writable directories from the host side (local, podman), safe against
 * what the sandbox may have left there: a symlink or a swapped directory never leads the host
 * outside the sandbox's own roots, and a planted symlink is copied as a link, never followed.
 *
 * A root may be a directory reached through /proc (a local sandbox's tmpfs, by a descriptor the
 * runner holds): paths are resolved component by component below it, never by realpath, which
 * would read such a link as a path of the host.
 */
import { spawn } from "node:child_process";
import { constants, existsSync } from "node:fs";
import { chown, lchown, lstat, mkdir, open, readdir, readlink, rm, symlink } from "node:fs/promises";
import path from "node:path";
import { limitPassed, type SnapshotWriter, type TreeShape } from "./snapshot-writer.js";
import type { FileTransport, PreparedExtras, PreparedFile, SandboxPath } from "./transport.js";

export interface Owner {
  uid: number;
  gid: number;
}

const COPY_CHUNK = 1024 * 1024;

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
export async function writeInside(base: string, rel: string, content: string | Uint8Array, mode: number, owner?: Owner): Promise<void> {
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

function entryParts(rel: string): string[] {
  const parts = rel.split("/").filter((s) => s.length > 0 && s !== ".");
  if (parts.length === 0 || parts.includes("..")) throw new Error(`invalid path "${rel}"`);
  return parts;
}

/** A directory (and its parents) under `base`; an existing one is kept, a link in the way refused. */
export async function makeDirInside(base: string, rel: string, mode: number, owner?: Owner): Promise<void> {
  const parts = entryParts(rel);
  const parent = await ensureDirs(base, parts.slice(0, -1), owner);
  const dir = path.join(parent, parts[parts.length - 1]);
  try {
    await mkdir(dir, { mode: mode & 0o777 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST" || !(await lstat(dir)).isDirectory()) throw e;
    return;
  }
  if (owner) await chown(dir, owner.uid, owner.gid);
}

/**
 * A symlink under `base` with `target` as its text. Its parents are directories (a link among
 * them is refused, never followed); symlink(2) never follows its last component and fails on an
 * existing name, so nothing is written through a link. Owned by the sandbox user (lchown).
 */
export async function linkInside(base: string, rel: string, target: string, owner?: Owner): Promise<void> {
  const parts = entryParts(rel);
  const parent = await ensureDirs(base, parts.slice(0, -1), owner);
  const link = path.join(parent, parts[parts.length - 1]);
  await symlink(target, link);
  if (owner) await lchown(link, owner.uid, owner.gid);
}

/** Most symlinks followed in one resolution, as the kernel's ELOOP limit. */
const MAX_LINKS = 40;

/**
 * `base/rel` with every symlink on the way resolved below `base` (a relative link within it; an
 * absolute one, or one climbing above `base`, leads outside the sandbox and is refused).
 */
async function insideReal(base: string, rel: string): Promise<string> {
  const outside = (): Error => new Error(`"${path.join(base, rel)}" leads outside the sandbox`);
  const todo = rel.split("/").filter((s) => s.length > 0 && s !== ".");
  const done: string[] = [];
  let links = 0;
  while (todo.length > 0) {
    const part = todo.shift() as string;
    if (part === "..") {
      if (done.length === 0) throw outside();
      done.pop();
      continue;
    }
    const current = path.join(base, ...done, part);
    if (!(await lstat(current)).isSymbolicLink()) {
      done.push(part);
      continue;
    }
    const target = await readlink(current);
    if (target.startsWith("/")) throw outside();
    if (++links > MAX_LINKS) throw new Error(`"${path.join(base, rel)}": too many levels of symbolic links`);
    todo.unshift(...target.split("/").filter((s) => s.length > 0 && s !== "."));
  }
  return path.join(base, ...done);
}

export async function readInside(base: string, rel: string): Promise<Buffer> {
  const real = await insideReal(base, rel);
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
  const start = await insideReal(base, rel);
  const out: string[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const relPath = prefix ? `${prefix}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path.join(dir, e.name), relPath);
      else if (e.isFile()) out.push(relPath);
    }
  };
  await walk(start, "");
  return out.sort();
}

/** One regular file into the writer: opened without following a link, at most `wanted` bytes read. */
async function copyFileOut(abs: string, name: string, into: SnapshotWriter): Promise<void> {
  let handle;
  try {
    handle = await open(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    return into.skip(name, `unreadable (${(e as NodeJS.ErrnoException).code})`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return into.skip(name, "not a regular file");
    const sink = into.file(name, info.mode, info.size);
    const buffer = Buffer.alloc(Math.min(COPY_CHUNK, Math.max(1, sink.wanted)));
    let position = 0;
    while (sink.wanted > 0) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, sink.wanted), position);
      if (bytesRead === 0) break;
      sink.write(buffer.subarray(0, bytesRead));
      position += bytesRead;
    }
    sink.end();
  } finally {
    await handle.close();
  }
}

/**
 * The shape of the tree under `start` as a copy would meet it (directories, files and links
 * counted), surveyed by names alone and given up as soon as a limit is passed: an agent that
 * leaves 200,001 files costs the host a listing, not 200,000 files written and removed again.
 */
async function surveyTree(start: string, limits: SnapshotWriter["limits"]): Promise<TreeShape> {
  const shape: TreeShape = { entries: 0, depth: 0, pathChars: 0 };
  const over = () => limitPassed(limits, shape) !== null;
  const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      if (!(e.isFile() || e.isDirectory() || e.isSymbolicLink())) continue;
      const name = prefix ? `${prefix}/${e.name}` : e.name;
      shape.entries++;
      shape.depth = Math.max(shape.depth, depth);
      shape.pathChars = Math.max(shape.pathChars, name.length);
      if (over()) return;
      if (e.isDirectory()) await walk(path.join(dir, e.name), name, depth + 1);
      if (over()) return;
    }
  };
  await walk(start, "", 1);
  return shape;
}

/** Every entry under base/rel into the writer: directories, files, symlinks as links; the rest skipped. */
export async function copyTreeOut(base: string, rel: string, into: SnapshotWriter): Promise<void> {
  const start = await insideReal(base, rel);
  const walk = async (dir: string, prefix: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (into.full) return;
      const name = prefix ? `${prefix}/${e.name}` : e.name;
      const abs = path.join(dir, e.name);
      if (e.isFile()) await copyFileOut(abs, name, into);
      else if (e.isSymbolicLink()) into.symlink(name, await readlink(abs));
      else if (e.isDirectory()) {
        into.directory(name, (await lstat(abs)).mode);
        if (!into.full) await walk(abs, name);
      } else into.skip(name, "not a regular file, directory or link");
    }
  };
  try {
    if (into.refuse(await surveyTree(start, into.limits))) return;
    await walk(start, "");
  } catch (e) {
    // The agent's tree, not the host, is at fault: a path the host cannot name stops the copy.
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "ENAMETOOLONG" && code !== "ELOOP") throw e;
    into.stop(`a path too long for the host to read (${code})`);
  }
}

/** Files through the host directories behind the sandbox's roots, owned by the sandbox user. */
export function hostTransport(hostDirs: Record<string, string>, owner: Owner): FileTransport {
  const dirOf = (at: SandboxPath): string => {
    const dir = hostDirs[at.root];
    if (!dir) throw new Error(`no host directory for ${at.root}`);
    return dir;
  };
  return {
    async write(files: PreparedFile[], extras?: PreparedExtras) {
      for (const f of files) await writeInside(dirOf(f.at), f.at.rel, f.content, f.mode, owner);
      for (const d of extras?.directories ?? []) await makeDirInside(dirOf(d.at), d.at.rel, d.mode, owner);
      for (const l of extras?.links ?? []) await linkInside(dirOf(l.at), l.at.rel, l.target, owner);
    },
    read: (at) => readInside(dirOf(at), at.rel),
    list: (at) => listInside(dirOf(at), at.rel),
    copyOut: (at, into) => copyTreeOut(dirOf(at), at.rel, into),
  };
}

function runQuietly(argv: string[]): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { env: {}, stdio: "ignore" });
    child.on("error", () => resolve());
    child.on("close", () => resolve());
  });
}

/**
 * Removes a tree a sandbox may have shaped against its removal: paths deeper than PATH_MAX, names
 * with newlines or bytes that are not UTF-8, directories without permissions. Node's rm first;
 * what it leaves is removed by coreutils' rm, which walks by file descriptor (no path length
 * limit), after giving the owner every permission back (for a runner that is not root). Never
 * crosses into another filesystem. Returns whether the tree is gone.
 */
export async function removeTree(dir: string): Promise<boolean> {
  try {
    await rm(dir, { recursive: true, force: true, maxRetries: 0 });
    return true;
  } catch {
    /* deep or locked: below */
  }
  await runQuietly(["/bin/rm", "-rf", "--one-file-system", "--", dir]);
  if (!existsSync(dir)) return true;
  await runQuietly(["/bin/chmod", "-R", "u+rwx", "--", dir]);
  await runQuietly(["/bin/rm", "-rf", "--one-file-system", "--", dir]);
  return !existsSync(dir);
}
