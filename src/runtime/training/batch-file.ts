/**
 * Writing a TrainingBatch where the worker can read it: a JSON file (small batches, inspection)
 * or a binary directory (batch.json manifest + one little-endian array per field, the layout of
 * src/runtime/trajectories/binary.ts). Both are written to a temporary name and renamed.
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TrainingBatch } from "../trajectories/batch.js";
import { encodeBatchBinary } from "../trajectories/binary.js";

export function writeBatchJson(path: string, batch: TrainingBatch): string {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, JSON.stringify(batch));
  renameSync(tmp, path);
  return path;
}

export function writeBatchDir(dir: string, batch: TrainingBatch): string {
  const { manifest, files } = encodeBatchBinary(batch);
  const tmp = `${dir}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  for (const [name, bytes] of files) writeFileSync(join(tmp, name), bytes);
  writeFileSync(join(tmp, "batch.json"), JSON.stringify(manifest));
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}
