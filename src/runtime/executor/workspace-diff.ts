/**
 * A try's workspace before → after: the task's files as they were written into the sandbox, and
 * the snapshot the verifier read (sandbox-reader.ts). `diffWorkspace` is pure (entries in, diff
 * out); `readWorkspaceDiff` reads the snapshot, lstat only (links are reported, never followed),
 * and bounds what it reads: a text file's patch is made only for files up to PATCH_FILE_BYTES,
 * all patches of one try together stop at PATCH_TOTAL_BYTES, and edits past MAX_EDIT_LENGTH
 * lines give no patch. What is left out says so (`omitted`), so the viewer never shows a cut
 * diff as whole.
 */
import { createHash } from "node:crypto";
import { lstat, readFile, readlink } from "node:fs/promises";
import { join } from "node:path";
import { createTwoFilesPatch } from "diff";
import type { ResolvedTask } from "../../compiler/contract/plan.js";
import { readSnapshotEntries } from "./snapshot-entries.js";

export const PATCH_FILE_BYTES = 256 * 1024;
export const PATCH_TOTAL_BYTES = 1024 * 1024;
const MAX_EDIT_LENGTH = 5000;

export interface WorkspaceEntry {
  path: string;
  kind: "file" | "symlink";
  size: number;
  /** sha256 of the content (files) or of the link's text. */
  hash: string;
  /** The content when it may be diffed as text (small enough, valid UTF-8, no NUL byte). */
  text?: string;
  target?: string;
  /** A link the verifier's sandbox did not recreate (snapshot-entries.ts). */
  refused?: true;
}

export interface WorkspaceDiffFile {
  path: string;
  status: "added" | "modified" | "deleted";
  kind: "text" | "binary" | "symlink";
  bytesBefore: number | null;
  bytesAfter: number | null;
  /** Unified diff (text files). */
  patch?: string;
  /** Why there is no patch. */
  omitted?: string;
  /** A link's text after (symlinks). */
  target?: string;
}

export interface WorkspaceDiff {
  formatVersion: 1;
  added: number;
  modified: number;
  deleted: number;
  unchanged: number;
  files: WorkspaceDiffFile[];
}

/** The changes from `before` to `after`, sorted by path; patches within the byte budgets. */
export function diffWorkspace(before: readonly WorkspaceEntry[], after: readonly WorkspaceEntry[]): WorkspaceDiff {
  const old = new Map(before.map((e) => [e.path, e]));
  const now = new Map(after.map((e) => [e.path, e]));
  const paths = [...new Set([...old.keys(), ...now.keys()])].sort();
  const out: WorkspaceDiff = { formatVersion: 1, added: 0, modified: 0, deleted: 0, unchanged: 0, files: [] };
  let budget = PATCH_TOTAL_BYTES;
  for (const path of paths) {
    const a = old.get(path);
    const b = now.get(path);
    if (a && b && a.kind === b.kind && a.hash === b.hash) {
      out.unchanged++;
      continue;
    }
    const status = !a ? "added" : !b ? "deleted" : "modified";
    out[status]++;
    const either = (b ?? a)!;
    const textual = (!a || a.text !== undefined) && (!b || b.text !== undefined) && either.kind === "file";
    const file: WorkspaceDiffFile = {
      path,
      status,
      kind: either.kind === "symlink" ? "symlink" : textual ? "text" : "binary",
      bytesBefore: a ? a.size : null,
      bytesAfter: b ? b.size : null,
      ...(b?.target !== undefined ? { target: b.target } : {}),
      ...(b?.refused ? { omitted: "a link the verifier did not get: it leads into /proc, /dev or /sys, loops, or climbs out of what the sandbox shows" } : {}),
    };
    if (file.kind === "text") {
      const patch =
        budget > 0
          ? createTwoFilesPatch(a ? `a/${path}` : "/dev/null", b ? `b/${path}` : "/dev/null", a?.text ?? "", b?.text ?? "", undefined, undefined, {
              context: 3,
              maxEditLength: MAX_EDIT_LENGTH,
            })
          : undefined;
      if (budget <= 0) file.omitted = `the try's diffs passed ${PATCH_TOTAL_BYTES / 1024} KiB`;
      else if (patch === undefined) file.omitted = `more than ${MAX_EDIT_LENGTH} lines changed`;
      else {
        file.patch = patch;
        budget -= Buffer.byteLength(patch);
      }
    } else if (file.kind === "binary") {
      file.omitted = [a, b].some((e) => e && e.size > PATCH_FILE_BYTES) ? `larger than ${PATCH_FILE_BYTES / 1024} KiB` : "not text";
    }
    out.files.push(file);
  }
  return out;
}

/** Entries of the task's files (what the sandbox's workspace held before the harness ran). */
export function taskEntries(files: ResolvedTask["files"]): WorkspaceEntry[] {
  return files.map((f) => entryOf(f.path, f.encoding === "base64" ? Buffer.from(f.content, "base64") : Buffer.from(f.content, "utf8")));
}

/** Entries of a workspace snapshot directory (files and links; `workspace` is where it lived, for links). */
export async function snapshotEntries(dir: string, workspace: string): Promise<WorkspaceEntry[]> {
  const entries = await readSnapshotEntries(dir, workspace);
  const out: WorkspaceEntry[] = [];
  for (const rel of entries.files) {
    const abs = join(dir, rel);
    const stat = await lstat(abs);
    if (!stat.isFile()) continue;
    out.push(entryOf(rel, await readFile(abs)));
  }
  for (const link of entries.links) {
    out.push({ path: link.rel, kind: "symlink", size: Buffer.byteLength(link.target), hash: sha256(Buffer.from(`link:${link.target}`)), target: link.target });
  }
  for (const rel of entries.refusedLinks) {
    const target = await readlink(join(dir, rel));
    out.push({ path: rel, kind: "symlink", size: Buffer.byteLength(target), hash: sha256(Buffer.from(`link:${target}`)), target, refused: true });
  }
  return out;
}

/** The diff of one try: the task's files → the snapshot the verifier read. */
export async function readWorkspaceDiff(task: ResolvedTask, snapshotDir: string, workspace: string): Promise<WorkspaceDiff> {
  return diffWorkspace(taskEntries(task.files), await snapshotEntries(snapshotDir, workspace));
}

function entryOf(path: string, bytes: Buffer): WorkspaceEntry {
  const entry: WorkspaceEntry = { path, kind: "file", size: bytes.length, hash: sha256(bytes) };
  if (bytes.length <= PATCH_FILE_BYTES && !bytes.includes(0)) {
    const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
    if (!text.includes("\uFFFD")) entry.text = text;
  }
  return entry;
}

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}
