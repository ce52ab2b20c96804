/**
 * The inference engine interface: completion by token ids, with logprobs.
 * Implementations register by `type` (scripted, openai-compatible, onnx), one file each.
 */
import type { Code } from "../../compiler/contract/codes.js";
import { ReinsError } from "../../compiler/contract/problem.js";

export interface SamplingParams {
  temperature: number;
  topP: number;
  maxTokens: number;
  /** Token ids that end generation (included in the returned ids when hit). */
  stopIds: number[];
  seed?: number;
}

export interface GenerateRequest {
  promptIds: number[];
  sampling: SamplingParams;
  /** Rollout id and call sequence, for engines that script per rollout and for logging. */
  rollout: string;
  seq: number;
  /** Aborted when the client goes away; engines should stop promptly. */
  signal?: AbortSignal;
}

export interface GenerateResult {
  ids: number[];
  logprobs: number[];
  finish: "stop" | "length";
  /** Weights version that produced these tokens. */
  weightsVersion: string;
  /** Test-only fault injection (scripted engine): the proxy cuts the response stream mid tool call. */
  fault?: "cut-stream";
}

/** Optional token-by-token streaming; `generate` must always work. */
export interface GenerateChunk {
  ids: number[];
  logprobs: number[];
}

export interface Engine {
  readonly type: string;
  generate(req: GenerateRequest): Promise<GenerateResult>;
  /** Stream tokens as they are produced; resolves with the same result `generate` would give. */
  generateStream?(req: GenerateRequest, onChunk: (c: GenerateChunk) => void): Promise<GenerateResult>;
  /** Load a new weights version; in-flight requests finish on the version they started with. */
  reload?(version: string, path: string): Promise<void>;
  close?(): Promise<void>;
}

export type EngineErrorKind = "unreachable" | "failed" | "bad-response";

const ENGINE_CODES = {
  unreachable: "EngineUnreachable",
  failed: "EngineFailed",
  "bad-response": "EngineBadResponse",
} as const satisfies Record<EngineErrorKind, Code>;

/** Engine failures that are infrastructure problems (retryable, never a reward). */
export class EngineError extends ReinsError {
  declare readonly code: (typeof ENGINE_CODES)[EngineErrorKind];

  constructor(
    message: string,
    readonly kind: EngineErrorKind = "failed",
    options?: { cause?: unknown },
  ) {
    super(ENGINE_CODES[kind], message, undefined, options);
  }
}
