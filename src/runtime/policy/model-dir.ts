/**
 * A policy model directory as the trainer writes it (trainers/torch/README.md):
 * model.onnx, model.safetensors, config.json (HF Qwen3 layout), tokenizer files, and READY holding
 * the weights version (written last, so a directory without it is incomplete).
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";

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

/** A weights path is a model directory or an .onnx file; returns null when there is no ONNX file. */
export function locateModel(path: string): ModelLocation | null {
  if (!existsSync(path)) return null;
  const isDir = statSync(path).isDirectory();
  const dir = isDir ? path : dirname(path);
  const onnxPath = isDir ? join(path, "model.onnx") : path;
  if (!existsSync(onnxPath)) return null;
  const ready = join(dir, "READY");
  const cfg = join(dir, "config.json");
  return {
    dir,
    onnxPath,
    readyVersion: existsSync(ready) ? readFileSync(ready, "utf8").trim() : undefined,
    config: existsSync(cfg) ? (JSON.parse(readFileSync(cfg, "utf8")) as PolicyModelConfig) : undefined,
  };
}

/** Version of a model file without READY: the first 16 hex digits of its sha256. */
export function fileVersion(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16);
}
