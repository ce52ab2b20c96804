/**
 * File effects for trajectories: reading input files (mistakes as diagnostics) and writing
 * exports. Everything else in this directory is pure.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Result } from "../../compiler/contract/diagnostics.js";
import { makeDiagnostic } from "../../compiler/contract/diagnostics.js";
import type { TrainingBatch } from "./batch.js";
import type { BinaryManifest } from "./binary.js";
import { batchToJsonl, decodeBatchBinary, encodeBatchBinary } from "./binary.js";

/** Read a UTF-8 file; a missing or unreadable file is a diagnostic, not an exception. */
export async function readTextFile(path: string): Promise<Result<string | undefined>> {
  try {
    return { value: await readFile(path, "utf8"), diagnostics: [] };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const at = { file: path, line: 1, column: 1 };
    if (code === "ENOENT") {
      return { value: undefined, diagnostics: [makeDiagnostic("FileNotFound", at, "file does not exist", "Check the path.")] };
    }
    if (code === "EISDIR") {
      return { value: undefined, diagnostics: [makeDiagnostic("FileUnreadable", at, "path is a directory, not a file", "Pass a file.")] };
    }
    return {
      value: undefined,
      diagnostics: [makeDiagnostic("FileUnreadable", at, `file cannot be read (${code ?? (err as Error).message})`, "Check the path and its permissions.")],
    };
  }
}

/**
 * Write a batch directory: `batch.json` (manifest), one `<array>.bin` per field (little-endian),
 * and `batch.jsonl` (the same batch as JSON lines, for inspection).
 */
export async function writeBatchDirectory(dir: string, batch: TrainingBatch): Promise<BinaryManifest> {
  await mkdir(dir, { recursive: true });
  const { manifest, files } = encodeBatchBinary(batch);
  for (const [name, bytes] of files) await writeFile(join(dir, name), bytes);
  await writeFile(join(dir, "batch.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  await writeFile(join(dir, "batch.jsonl"), batchToJsonl(batch));
  return manifest;
}

/** Read a batch directory written by writeBatchDirectory. */
export async function readBatchDirectory(dir: string): Promise<TrainingBatch> {
  const manifest = JSON.parse(await readFile(join(dir, "batch.json"), "utf8")) as BinaryManifest;
  const files = new Map<string, Uint8Array>();
  for (const spec of Object.values(manifest.arrays)) files.set(spec.file, new Uint8Array(await readFile(join(dir, spec.file))));
  return decodeBatchBinary(manifest, (name) => files.get(name) as Uint8Array);
}

/** Write records as JSON lines. */
export async function writeJsonl(path: string, items: readonly unknown[]): Promise<void> {
  await writeFile(path, items.map((i) => JSON.stringify(i)).join("\n") + (items.length ? "\n" : ""));
}

export async function writeTextFile(path: string, text: string): Promise<void> {
  await writeFile(path, text);
}
