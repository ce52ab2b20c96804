/**
 * Hidden files: written to a fresh private directory on the host only at verification time (after
 * the harness has exited), handed to the verifier's commands, and removed afterwards. The harness
 * never has a path to them.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { ResolvedFile } from "../../compiler/contract/plan.js";
import { normalizeRelative } from "./workspace.js";

export interface HiddenDir {
  dir: string;
  remove(): Promise<void>;
}

/** Writes resolved files (paths already checked by the compiler; checked again here) under `dir`. */
export async function writeResolvedFiles(dir: string, files: readonly ResolvedFile[]): Promise<void> {
  for (const f of files) {
    const rel = normalizeRelative(f.path);
    if (rel === null || rel === ".") throw new Error(`file path escapes its directory: ${f.path}`);
    const abs = join(dir, rel);
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(abs, f.encoding === "base64" ? Buffer.from(f.content, "base64") : f.content);
    await chmod(abs, f.mode & 0o777);
  }
}

export async function materializeHiddenFiles(files: readonly ResolvedFile[], parent = tmpdir()): Promise<HiddenDir> {
  const dir = await mkdtemp(join(parent, "reins-hidden-"));
  await chmod(dir, 0o700);
  try {
    await writeResolvedFiles(dir, files);
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
