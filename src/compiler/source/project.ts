/**
 * The project: the one directory tree specs may read. Every host path a spec names (`imports`,
 * `workspace.from`/`fromDir`, harness `mounts`, a model's `chatTemplateFile`) is located inside
 * it, lexically and again after symlinks are resolved, before anything is opened; files are read
 * only when they are regular files, opened non-blocking and read up to a size cap, so a device, a
 * FIFO or /proc never stalls or floods the compiler.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, realpathSync, statSync, type Stats } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";

/** Largest spec file (and imported spec file) read. */
export const MAX_SPEC_BYTES = 8 * 1024 * 1024;
/** Largest single workspace file (`from`, or one file of `fromDir`) and chat template file. */
export const MAX_WORKSPACE_FILE_BYTES = 16 * 1024 * 1024;
/** Most files read from one `fromDir`, and their total size. */
export const MAX_DIR_FILES = 10_000;
export const MAX_DIR_BYTES = 64 * 1024 * 1024;
/** Most spec files listed from the directories given or imported, and directory entries visited. */
export const MAX_SPEC_FILES = 10_000;
export const MAX_DIR_ENTRIES = 200_000;

const KERNEL_TREES = ["/proc", "/sys", "/dev"];

export interface ProjectRoot {
  /** Absolute directory as given (lexical checks). */
  dir: string;
  /** The same directory with symlinks resolved (checks after resolving). */
  real: string;
}

export type Refusal = { ok: false; code: "OutsideProject" | "FileNotFound" | "FileUnreadable" | "NotRegularFile" | "FileTooLarge"; why: string };
export type Located = { ok: true; path: string; real: string } | Refusal;

/** A project root for an existing directory, or why not. */
export function projectRootAt(dir: string): { ok: true; root: ProjectRoot } | { ok: false; why: string } {
  const abs = resolve(dir);
  let real: string;
  try {
    real = realpathSync.native(abs);
  } catch (err) {
    return { ok: false, why: `${dir} does not exist (${(err as NodeJS.ErrnoException).code ?? "unreadable"})` };
  }
  try {
    if (!lstatSync(real).isDirectory()) return { ok: false, why: `${dir} is not a directory` };
  } catch (err) {
    return { ok: false, why: `${dir} cannot be read (${(err as Error).message})` };
  }
  return { ok: true, root: { dir: abs, real } };
}

/** The project of a spec file that was loaded without one: its own directory. */
export function ownDirectoryRoots(specFile: string): ProjectRoot[] {
  const r = projectRootAt(dirname(specFile));
  return r.ok ? [r.root] : [];
}

/**
 * The default project root: the deepest directory holding every path given (a directory counts as
 * itself, a file as its directory; symlinks followed). Undefined when that is the file system's root.
 */
export function commonProjectDir(paths: readonly string[], cwd: string): string | undefined {
  if (paths.length === 0) return undefined;
  // A missing path counts as its nearest existing directory: it is reported missing, never read.
  const dirs = paths.map((p) => {
    let d = resolve(cwd, p);
    for (;;) {
      const st = statSync(d, { throwIfNoEntry: false });
      if (st?.isDirectory() || dirname(d) === d) return d;
      d = dirname(d);
    }
  });
  let common = dirs[0]!;
  for (const d of dirs.slice(1)) while (!isWithin(common, d)) common = dirname(common);
  return dirname(common) === common ? undefined : common;
}

export function isWithin(dir: string, p: string): boolean {
  const rel = relative(dir, p);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * Where `p` (relative to `base`) lies, if inside one of `roots` once every symlink is resolved
 * (realpath looks at path components; nothing is opened). A path outside is refused whether it
 * exists or not, so the answer says nothing about the host. The target must exist.
 */
export function locateInProject(roots: readonly ProjectRoot[], base: string, p: string): Located {
  if (p.includes("\0")) return { ok: false, code: "OutsideProject", why: "it contains a NUL byte" };
  const abs = resolve(base, p);
  const lexical = roots.some((r) => isWithin(r.dir, abs) || isWithin(r.real, abs));
  const project = roots[0]?.dir ?? "(none)";
  let real: string;
  try {
    real = realpathSync.native(abs);
  } catch (err) {
    if (!lexical) return { ok: false, code: "OutsideProject", why: `it resolves to ${abs}, outside the project ${project}` };
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ENOENT" || code === "ENOTDIR"
      ? { ok: false, code: "FileNotFound", why: "it does not exist" }
      : { ok: false, code: "FileUnreadable", why: `it cannot be resolved (${code ?? (err as Error).message})` };
  }
  if (!roots.some((r) => isWithin(r.real, real))) {
    return {
      ok: false,
      code: "OutsideProject",
      why: lexical ? `a symlink leads to ${real}, outside the project ${project}` : `it resolves to ${abs}, outside the project ${project}`,
    };
  }
  // Even a project rooted at / (--project-root /) never reads the kernel's files: their sizes lie
  // and reading some of them blocks or consumes (/proc/kmsg).
  const kernel = KERNEL_TREES.find((t) => isWithin(t, real));
  if (kernel) return { ok: false, code: "NotRegularFile", why: `it lies under ${kernel}, the kernel's files, not the project's` };
  return { ok: true, path: abs, real };
}

/** "a FIFO", "a directory"… for a file that is not a regular file. */
export function describeType(st: Stats): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO";
  if (st.isCharacterDevice()) return "a character device";
  if (st.isBlockDevice()) return "a block device";
  if (st.isSocket()) return "a socket";
  if (st.isSymbolicLink()) return "a symlink";
  return "not a regular file";
}

/**
 * The bytes of a regular file, at most `limit` of them: lstat first (never open what is not a
 * regular file), then open non-blocking without following a symlink, check the opened file is the
 * one looked at, and read no more than limit + 1 bytes whatever its size says (/proc files say 0).
 */
export function readRegularFile(path: string, limit: number): { ok: true; bytes: Buffer; mode: number } | Refusal {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ENOENT"
      ? { ok: false, code: "FileNotFound", why: "it does not exist" }
      : { ok: false, code: "FileUnreadable", why: (err as Error).message };
  }
  if (!st.isFile()) return { ok: false, code: "NotRegularFile", why: `it is ${describeType(st)}` };
  if (st.size > limit) return { ok: false, code: "FileTooLarge", why: `it is ${st.size} bytes; the limit is ${limit}` };
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY);
  } catch (err) {
    return { ok: false, code: "FileUnreadable", why: (err as Error).message };
  }
  try {
    const fst = fstatSync(fd);
    if (!fst.isFile() || fst.ino !== st.ino || fst.dev !== st.dev) return { ok: false, code: "NotRegularFile", why: "it changed while it was opened" };
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(Math.min(1024 * 1024, limit + 1 - total));
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      chunks.push(buf.subarray(0, n));
      total += n;
      if (total > limit) return { ok: false, code: "FileTooLarge", why: `it is larger than the limit of ${limit} bytes` };
    }
    return { ok: true, bytes: Buffer.concat(chunks, total), mode: fst.mode };
  } catch (err) {
    return {
      ok: false,
      code: "FileUnreadable",
      why: (err as NodeJS.ErrnoException).code === "EAGAIN" ? "it has nothing to read now (a stream, not a file)" : (err as Error).message,
    };
  } finally {
    closeSync(fd);
  }
}
