/**
 * The trainer protocol, version 1: JSON over HTTP on loopback (trainers/torch/README.md).
 * Every POST body may carry `protocolVersion`; every answer carries it.
 */
import type { ResolvedAlgorithm } from "../../compiler/contract/plan.js";
import type { TrainingBatch } from "../trajectories/batch.js";

export const TRAINER_PROTOCOL_VERSION = 1;

export interface TrainerHealth {
  status: "ok";
  protocolVersion: number;
  step: number;
  device: string;
  worldSize: number;
  parameters: number;
  vocabSize: number;
  modelDir: string;
  outDir: string;
  pendingTokens: number;
  weightsVersion: string;
  valueHead: boolean;
  busy: boolean;
}

/** A batch inline, or the path of a JSON batch file or a binary batch directory. */
export type BatchRef = { batch: TrainingBatch } | { batchPath: string };

export interface ForwardBackwardOptions {
  /** "rl" (default): the Algorithm's objective; "sft": negative log-likelihood of trained tokens. */
  objective?: "rl" | "sft";
  /** Overrides of the batch's algorithm fields. */
  algorithm?: Partial<TrainingBatch["algorithm"]>;
  microBatchTokens?: number;
  /** Compute a prefix all rows of a micro-batch share once (default true; exact up to float rounding). */
  sharePrefix?: boolean;
  /**
   * Append the trainer's logprob of every trained token, per row, to this file (JSON lines
   * `{rollout, leaf, logprobs}`; "rl" only): the token view's trainer logprob and ratio.
   */
  recordLogprobs?: string;
  /** The KL term's reference (klCoef > 0): the weights of this checkpoint directory (SFT's); default the worker's starting weights. */
  referenceCheckpoint?: string;
}

export interface CorrectionMetrics {
  type: ResolvedAlgorithm["correction"]["type"];
  level: string | null;
  weightMean: number;
  weightMax: number;
  weightMin: number;
  /** TIS: share of trained tokens whose weight hit the cap. */
  fractionCapped: number;
  /** MIS: share of trained tokens masked out. */
  fractionMasked: number;
}

export interface ForwardBackwardMetrics {
  objective: "rl" | "sft";
  loss: number;
  /** Trained tokens (loss mask 1). */
  tokens: number;
  /** Tokens through the model (tree: each once; paths: shared prefixes repeated). */
  tokensProcessed: number;
  tokensPadded: number;
  rows: number;
  rollouts: number;
  sequences: number;
  microBatches: number;
  seconds: number;
  tokensPerSecond: number | null;
  trainedTokensPerSecond: number | null;
  layout: "tree" | "paths";
  step: number;
  /** SFT only. */
  nll?: number;
  /** RL only. */
  pgLoss?: number;
  entropy?: number;
  clipFraction?: number;
  /** k3 KL to the frozen reference (null when klCoef is 0). */
  kl?: number | null;
  /** k3 KL between rollout and trainer logprobs on the trained tokens. */
  klRollout?: number;
  logprobAbsDiff?: number;
  correction?: CorrectionMetrics;
  valueLoss?: number;
}

export interface OptimStepResult {
  gradNorm: number;
  lr: number;
  step: number;
  tokens: number;
}

export interface SaveWeightsResult {
  /** Content hash of the weights (first 16 hex digits of the safetensors sha256). */
  version: string;
  step: number;
  /** Directory holding model.onnx and/or model.safetensors (the formats asked), config.json, tokenizer files, READY, and trained.json once trained. */
  dir: string;
  onnxPath: string | null;
  /** model.safetensors, or model.safetensors.index.json when the weights are sharded. */
  safetensorsPath: string | null;
}

export interface CheckpointResult {
  path: string;
  step: number;
  weightsVersion: string | null;
}
