/**
 * Compact binary form of a TrainingBatch: one little-endian typed array per field, all trees
 * (or paths) concatenated, plus a `batch.json` manifest. Pure: bytes in, bytes out (io.ts writes).
 *
 * Tree layout arrays: tokens <i4, parent <i4 (local to its tree: -1 for a root token, else an
 * index within the same tree), position <i4, loss_mask |u1, rollout_logprobs <f4,
 * advantages <f4, branch <i4, owner_leaf <i4. Path layout arrays: tokens, loss_mask,
 * rollout_logprobs, advantages. `manifest.trees[k]` / `manifest.paths[k]` give each item's
 * `offset` and `length` into the arrays.
 */
import type { PackedTree, PathSample, TrainingBatch } from "./batch.js";

export type Dtype = "<i4" | "|u1" | "<f4";

export interface ArraySpec {
  file: string;
  /** NumPy dtype string. */
  dtype: Dtype;
  length: number;
}

export interface TreeEntry {
  rollout: string;
  task: string;
  harness: string;
  offset: number;
  length: number;
  leaves: number;
  reward?: number;
}

export interface PathEntry {
  rollout: string;
  task: string;
  harness: string;
  leaf: number;
  offset: number;
  length: number;
  reward?: number;
}

export interface BinaryManifest {
  formatVersion: 1;
  byteOrder: "little";
  step: number;
  layout: "tree" | "paths";
  algorithm: TrainingBatch["algorithm"];
  composition: TrainingBatch["composition"];
  tokens: number;
  arrays: Record<string, ArraySpec>;
  trees?: TreeEntry[];
  paths?: PathEntry[];
}

export interface BinaryBatch {
  manifest: BinaryManifest;
  files: Map<string, Uint8Array>;
}

type Field = { name: string; dtype: Dtype; get: (item: PackedTree & PathSample) => readonly number[] | undefined };

const TREE_FIELDS: Field[] = [
  { name: "tokens", dtype: "<i4", get: (t) => t.tokens },
  { name: "parent", dtype: "<i4", get: (t) => t.parent },
  { name: "position", dtype: "<i4", get: (t) => t.position },
  { name: "loss_mask", dtype: "|u1", get: (t) => t.lossMask },
  { name: "rollout_logprobs", dtype: "<f4", get: (t) => t.rolloutLogprobs },
  { name: "advantages", dtype: "<f4", get: (t) => t.advantages },
  { name: "branch", dtype: "<i4", get: (t) => t.branch },
  { name: "owner_leaf", dtype: "<i4", get: (t) => t.ownerLeaf },
];

const PATH_FIELDS: Field[] = [
  { name: "tokens", dtype: "<i4", get: (t) => t.tokens },
  { name: "loss_mask", dtype: "|u1", get: (t) => t.lossMask },
  { name: "rollout_logprobs", dtype: "<f4", get: (t) => t.rolloutLogprobs },
  { name: "advantages", dtype: "<f4", get: (t) => t.advantages },
];

function allocate(dtype: Dtype, n: number): Int32Array | Uint8Array | Float32Array {
  if (dtype === "<i4") return new Int32Array(n);
  if (dtype === "|u1") return new Uint8Array(n);
  return new Float32Array(n);
}

/** Little-endian bytes of a typed array (copies only on a big-endian host). */
function littleEndianBytes(arr: Int32Array | Uint8Array | Float32Array): Uint8Array {
  const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
  if (arr.BYTES_PER_ELEMENT === 1 || new Uint8Array(new Uint16Array([1]).buffer)[0] === 1) return bytes;
  const out = new Uint8Array(bytes.length);
  const view = new DataView(out.buffer);
  for (let i = 0; i < arr.length; i++) {
    if (arr instanceof Float32Array) view.setFloat32(i * 4, arr[i], true);
    else view.setInt32(i * 4, arr[i] as number, true);
  }
  return out;
}

export function encodeBatchBinary(batch: TrainingBatch): BinaryBatch {
  const items = (batch.layout === "tree" ? (batch.trees ?? []) : (batch.paths ?? [])) as (PackedTree & PathSample)[];
  const fields = batch.layout === "tree" ? TREE_FIELDS : PATH_FIELDS;
  const total = items.reduce((s, t) => s + t.tokens.length, 0);
  const manifest: BinaryManifest = {
    formatVersion: 1,
    byteOrder: "little",
    step: batch.step,
    layout: batch.layout,
    algorithm: batch.algorithm,
    composition: batch.composition,
    tokens: total,
    arrays: {},
  };
  const files = new Map<string, Uint8Array>();
  for (const field of fields) {
    const arr = allocate(field.dtype, total);
    let offset = 0;
    for (const item of items) {
      const values = field.get(item);
      if (values) for (let i = 0; i < values.length; i++) arr[offset + i] = values[i];
      else if (field.name === "owner_leaf") arr.fill(-1, offset, offset + item.tokens.length);
      offset += item.tokens.length;
    }
    const file = `${field.name}.bin`;
    manifest.arrays[field.name] = { file, dtype: field.dtype, length: total };
    files.set(file, littleEndianBytes(arr));
  }
  let offset = 0;
  if (batch.layout === "tree") {
    manifest.trees = items.map((t) => {
      const e: TreeEntry = { rollout: t.rollout, task: t.task, harness: t.harness, offset, length: t.tokens.length, leaves: t.leaves ?? 0 };
      if (t.reward !== undefined) e.reward = t.reward;
      offset += t.tokens.length;
      return e;
    });
  } else {
    manifest.paths = items.map((p) => {
      const e: PathEntry = { rollout: p.rollout, task: p.task, harness: p.harness, leaf: p.leaf, offset, length: p.tokens.length };
      if (p.reward !== undefined) e.reward = p.reward;
      offset += p.tokens.length;
      return e;
    });
  }
  return { manifest, files };
}

function readArray(spec: ArraySpec, bytes: Uint8Array): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<number>(spec.length);
  for (let i = 0; i < spec.length; i++) {
    if (spec.dtype === "<i4") out[i] = view.getInt32(i * 4, true);
    else if (spec.dtype === "|u1") out[i] = view.getUint8(i);
    else out[i] = view.getFloat32(i * 4, true);
  }
  return out;
}

/** Decode a binary batch back into a TrainingBatch (float fields come back as float32 values). */
export function decodeBatchBinary(manifest: BinaryManifest, readFile: (name: string) => Uint8Array): TrainingBatch {
  const arrays: Record<string, number[]> = {};
  for (const [name, spec] of Object.entries(manifest.arrays)) arrays[name] = readArray(spec, readFile(spec.file));
  const slice = (name: string, offset: number, length: number) => arrays[name].slice(offset, offset + length);
  const batch: TrainingBatch = {
    formatVersion: 1,
    step: manifest.step,
    layout: manifest.layout,
    algorithm: manifest.algorithm,
    composition: manifest.composition,
  };
  if (manifest.layout === "tree") {
    batch.trees = (manifest.trees ?? []).map((e) => {
      const t: PackedTree = {
        rollout: e.rollout,
        task: e.task,
        harness: e.harness,
        tokens: slice("tokens", e.offset, e.length),
        parent: slice("parent", e.offset, e.length),
        position: slice("position", e.offset, e.length),
        lossMask: slice("loss_mask", e.offset, e.length),
        rolloutLogprobs: slice("rollout_logprobs", e.offset, e.length),
        advantages: slice("advantages", e.offset, e.length),
        branch: slice("branch", e.offset, e.length),
        ownerLeaf: slice("owner_leaf", e.offset, e.length),
        leaves: e.leaves,
      };
      if (e.reward !== undefined) t.reward = e.reward;
      return t;
    });
  } else {
    batch.paths = (manifest.paths ?? []).map((e) => {
      const p: PathSample = {
        rollout: e.rollout,
        task: e.task,
        harness: e.harness,
        leaf: e.leaf,
        tokens: slice("tokens", e.offset, e.length),
        lossMask: slice("loss_mask", e.offset, e.length),
        rolloutLogprobs: slice("rollout_logprobs", e.offset, e.length),
        advantages: slice("advantages", e.offset, e.length),
      };
      if (e.reward !== undefined) p.reward = e.reward;
      return p;
    });
  }
  return batch;
}

/** JSONL for inspection: a header line, then one line per tree or path. */
export function batchToJsonl(batch: TrainingBatch): string {
  const { trees, paths, ...header } = batch;
  const lines = [JSON.stringify({ type: "batch", ...header })];
  for (const t of trees ?? []) lines.push(JSON.stringify({ type: "tree", ...t }));
  for (const p of paths ?? []) lines.push(JSON.stringify({ type: "path", ...p }));
  return `${lines.join("\n")}\n`;
}
