/**
 * The entries of a workspace snapshot as the verifier sandbox gets them: regular files, empty
 * directories and symlinks (read as links, never followed on the host), and which links are
 * recreated there.
 *
 * A link in the verifier sandbox leads only to what the verifier itself can read: its host is
 * read-only, its HOME and /tmp fresh, the hidden files under a random name made after the links.
 * One thing is worse than a file the agent could have written itself: a link into /proc or /dev
 * (`/proc/self/fd/3`, `/dev/fd/3`, `/dev/stdin`) resolves in the process that opens it, so a
 * verifier comparing `$REINS_HIDDEN/expected` with `answer.txt` would read its own expected file
 * twice. Such links are left out: every link is resolved as the kernel would (the snapshot's
 * own links followed), and one that ends under /proc, /dev or /sys, that climbs (`..`) out of a
 * host directory whose links are unknown here, or that loops, is not recreated.
 */
import { lstat, readdir, readlink } from "node:fs/promises";
import { join, posix } from "node:path";

export interface SnapshotEntries {
  /** Regular files, relative, sorted. */
  files: string[];
  /** Directories holding no file or directory (empty, or links only), relative. */
  emptyDirectories: { rel: string; mode: number }[];
  /** Symlinks recreated, with their text as the agent wrote it. */
  links: { rel: string; target: string }[];
  /** Symlinks left out, relative. */
  refusedLinks: string[];
}

/** Where a link may never lead inside a sandbox: these resolve per reader, or reach devices. */
const PER_READER_ROOTS = ["/proc", "/dev", "/sys"];

/** Most links followed in one resolution, as the kernel's ELOOP limit. */
const MAX_LINKS = 40;

/**
 * Where the link at `linkAbs` leads (absolute, normalized) when followed in a sandbox whose
 * workspace at `workspace` holds `links` (workspace-relative path → text); null when it loops or
 * climbs out of a directory outside the workspace (other than `/`), whose links are unknown.
 */
export function resolveLink(linkAbs: string, target: string, links: ReadonlyMap<string, string>, workspace: string): string | null {
  const relOf = (abs: string): string | null => (abs.startsWith(`${workspace}/`) ? abs.slice(workspace.length + 1) : null);
  let dir = posix.dirname(linkAbs);
  let todo = target.split("/");
  if (target.startsWith("/")) dir = "/";
  let followed = 1;
  while (todo.length > 0) {
    const part = todo.shift() as string;
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (dir !== "/" && dir !== workspace && relOf(dir) === null) return null;
      dir = posix.dirname(dir);
      continue;
    }
    const next = dir === "/" ? `/${part}` : `${dir}/${part}`;
    const rel = relOf(next);
    const text = rel === null ? undefined : links.get(rel);
    if (text === undefined) {
      dir = next;
      continue;
    }
    if (++followed > MAX_LINKS) return null;
    if (text.startsWith("/")) dir = "/";
    todo = [...text.split("/"), ...todo];
  }
  return dir;
}

/** Whether a link may be recreated in the verifier sandbox (see the file comment). */
export function linkIsSafe(linkAbs: string, target: string, links: ReadonlyMap<string, string>, workspace: string): boolean {
  const end = resolveLink(linkAbs, target, links, workspace);
  if (end === null) return false;
  return !PER_READER_ROOTS.some((root) => end === root || end.startsWith(`${root}/`));
}

/** Walks the snapshot at `dir` (lstat only: nothing is followed) and sorts its entries. */
export async function readSnapshotEntries(dir: string, workspace: string): Promise<SnapshotEntries> {
  const files: string[] = [];
  const emptyDirectories: { rel: string; mode: number }[] = [];
  const found = new Map<string, string>();
  const walk = async (abs: string, prefix: string): Promise<void> => {
    const entries = await readdir(abs, { withFileTypes: true });
    const leaf = !entries.some((e) => e.isDirectory() || e.isFile());
    if (leaf && prefix !== "") emptyDirectories.push({ rel: prefix, mode: (await lstat(abs)).mode & 0o777 });
    for (const e of entries) {
      const rel = prefix ? `${prefix}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(join(abs, e.name), rel);
      else if (e.isFile()) files.push(rel);
      else if (e.isSymbolicLink()) found.set(rel, await readlink(join(abs, e.name)));
    }
  };
  await walk(dir, "");
  const links: { rel: string; target: string }[] = [];
  const refusedLinks: string[] = [];
  for (const [rel, target] of [...found].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (linkIsSafe(`${workspace}/${rel}`, target, found, workspace)) links.push({ rel, target });
    else refusedLinks.push(rel);
  }
  return { files: files.sort(), emptyDirectories, links, refusedLinks };
}
