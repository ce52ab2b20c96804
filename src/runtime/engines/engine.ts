/**
 * The inference engine interface: completion by token ids, with logprobs.
 * Implementations register by `type` (scripted, openai-compatible, onnx, vllm, sglang, llama-cpp), one file each; each
 * exports an EngineFactory, which the registry loads on demand.
 */
import type { Code } from "../../compiler/contract/codes.js";
import { ReinsError } from "../../compiler/contract/problem.js";
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
  /** The plan's rollout id, its infrastructure try (1-based) and the call's seq within the try:
   * for engines that script or seed per rollout, and for logging. */
  rolloutId: string;
  try: number;
  seq: number;
  /** The rollout's harness, when the proxy knows it. */
  harness?: string;
  /** Aborted when the client goes away; engines should stop promptly. */
  signal?: AbortSignal;
}

export interface GenerateResult {
  ids: number[];
  logprobs: number[];
  finish: "stop" | "length";
  /** Weights version that produced these tokens. */
  weightsVersion: string;
}

/** Optional token-by-token streaming; `generate` must always work. */
export interface GenerateChunk {
  ids: number[];
  logprobs: number[];
}

/**
 * What a server-backed engine found when it started (its capability probe): which server runs
 * there, its version, the kind of logprobs it returns (and whether the server said so or the
 * spec/default assumed it), the routes that matter and the context length it serves.
 * logprobsMode — raw: log-softmax of the model's logits, before temperature and top-p;
 * temperature: after temperature, before top-k/top-p truncation; processed: the distribution
 * the token was sampled from; logits: not logprobs at all.
 */
export interface EngineInfo {
  type: string;
  server: "vllm" | "sglang" | "llama.cpp";
  version: string | null;
  logprobsMode: LogprobsMode;
  logprobsModeFrom: "server" | "spec" | "default";
  routes: { generate: string; reload?: string; pause?: string; resume?: string; resetCache?: string; updateVersion?: string };
  maxModelLen?: number;
  /** The model path the server says it loaded (vLLM: /v1/models `root`; SGLang: /get_model_info `model_path`). */
  modelPath?: string;
}

export type LogprobsMode = "raw" | "temperature" | "processed" | "logits";

/** What `reins eval --json` and `reins run --json` report of the engine: `engine: {type, server, version, logprobsMode}`. */
export type EngineSummary = Pick<EngineInfo, "type" | "server" | "version" | "logprobsMode">;

export function summarizeEngine(info: EngineInfo): EngineSummary {
  return { type: info.type, server: info.server, version: info.version, logprobsMode: info.logprobsMode };
}

export interface Engine {
  readonly type: string;
  /** The capability probe's result, for engines behind a probed server. */
  info?(): EngineInfo;
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

export type EngineErrorKind = "unreachable" | "failed" | "bad-response" | "stream-cut";

const ENGINE_CODES = {
  unreachable: "EngineUnreachable",
  failed: "EngineFailed",
  "bad-response": "EngineBadResponse",
  "stream-cut": "EngineStreamCut",
} as const satisfies Record<EngineErrorKind, Code>;

/**
 * Engine failures that are infrastructure problems (retryable, never a reward).
 * `stream-cut`: the engine's token stream broke after it had produced tokens; `partial` holds
 * them (as a result: ids, logprobs, the finish it had reached, weights version). The proxy records
 * them and breaks its own answer's stream the same way, so the harness meets a failing upstream.
 */
export class EngineError extends ReinsError {
  declare readonly code: (typeof ENGINE_CODES)[EngineErrorKind];

  constructor(
    message: string,
    readonly kind: EngineErrorKind = "failed",
    readonly partial?: GenerateResult,
    options?: { cause?: unknown },
  ) {
    super(ENGINE_CODES[kind], message, undefined, options);
  }
}
