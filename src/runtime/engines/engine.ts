/**
 * The inference engine interface: completion by token ids, with logprobs.
 * Implementations register by `type` (scripted, openai-compatible, onnx), one file each; each
 * exports an EngineFactory, which the registry loads on demand.
 */
import type { ResolvedEngine, ResolvedModel } from "../../compiler/contract/plan.js";
import type { ModelRuntime } from "../model/model-runtime.js";

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

/** What a factory gets besides its spec: the model and its tokenizer/template runtime. */
export interface EngineContext {
  model: ResolvedModel;
  runtime: ModelRuntime;
}

export type EngineFactory<S extends ResolvedEngine = ResolvedEngine> = (spec: S, ctx: EngineContext) => Promise<Engine>;

/** Engine failures that are infrastructure problems (retryable, never a reward). */
export class EngineError extends Error {
  constructor(
    message: string,
    readonly kind: "unreachable" | "failed" | "bad-response" = "failed",
  ) {
    super(message);
    this.name = "EngineError";
  }
}
