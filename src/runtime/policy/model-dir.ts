/**
 * A policy model directory as the trainer writes it (trainers/torch/README.md):
 * model.onnx, model.safetensors, config.json (HF Qwen3 layout), tokenizer files, and READY holding
 * the weights version (written last, so a directory without it is incomplete).
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { checkModelFile, readModelFile } from "../../compiler/index.js";

export interface PolicyModelConfig {
  vocab_size: number;
  hidden_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  max_position_embeddings: number;
  special_tokens?: Record<string, number>;
}

export interface ModelLocation {
  dir: string;
  onnxPath: string;
  /** The READY file's version, when present. */
  readyVersion?: string;
  config?: PolicyModelConfig;
}

/**
 * A weights path is a model directory or an .onnx file; returns null when there is no ONNX file.
 * Its files are checked as the compiler checks a Model's files (a regular file outside /proc,
 * /sys and /dev; READY and config.json at most 16 MiB): throws an Error saying which is refused
 * and why, so a link to /proc/self/environ never becomes a weights version and a FIFO never
 * stalls the engine.
 */
export function locateModel(path: string): ModelLocation | null {
  if (!existsSync(path)) return null;
  const isDir = statSync(path).isDirectory();
  const dir = isDir ? path : dirname(path);
  const onnxPath = isDir ? join(path, "model.onnx") : path;
  if (!existsSync(onnxPath)) return null;
  const onnx = checkModelFile(onnxPath, dir, "weights");
  if (!onnx.ok) throw new Error(`${onnxPath} is not read: ${onnx.why}`);
  const text = (name: string): string | undefined => {
    const read = readModelFile(join(dir, name), dir, "config");
    if (read.ok) return read.text;
    if (read.code === "FileNotFound") return undefined;
    throw new Error(`${join(dir, name)} is not read: ${read.why}`);
  };
  const ready = text("READY");
  const cfg = text("config.json");
  return {
    dir,
    onnxPath,
    readyVersion: ready !== undefined ? ready.trim() : undefined,
    config: cfg !== undefined ? (JSON.parse(cfg) as PolicyModelConfig) : undefined,
  };
}

/** Version of a model file without READY: the first 16 hex digits of its sha256. */
export function fileVersion(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16);
}
