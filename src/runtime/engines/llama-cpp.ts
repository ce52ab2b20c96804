/**
 * llama.cpp's server (llama-server). Completions: `POST /completion` with the prompt as token ids
 * and every sampler set, since its defaults are not neutral (temperature 0.8, top_k 40, top_p
 * 0.95, min_p 0.05): top_k 0, min_p 0, typical_p 1, repeat/presence/frequency penalties off, DRY
 * and XTC off, mirostat off, and the sampler chain limited to top_p then temperature. It returns
 * `post_sampling_probs` (the probability under the chain that sampled the token, so logprobs are
 * the sampling distribution's) and the ids in `tokens` (`return_tokens`).
 * Evaluation only: llama.cpp cannot load new full weights, so `reload` is an error (and the
 * compiler refuses an Experiment whose policy it serves).
 */
import type { ResolvedEngine } from "../../compiler/contract/plan.js";
import { EngineError, type EngineFactory, type EngineInfo, type GenerateRequest } from "./engine.js";
import { HttpEngine, serverRoot, type Piece } from "./http.js";
import { probeServer, readProbe } from "./probe.js";

type Spec = Extract<ResolvedEngine, { type: "llama-cpp" }>;

export const createLlamaCppEngine: EngineFactory<Spec> = async (spec) => {
  const probe = readProbe("llama-cpp", await probeServer(spec.baseUrl, spec.apiKeyEnv));
  return new LlamaCppEngine(spec, probe);
};

export class LlamaCppEngine extends HttpEngine {
  readonly type = "llama-cpp";

  constructor(
    private readonly spec: Spec,
    private readonly probe: EngineInfo,
  ) {
    super(spec.baseUrl, spec.apiKeyEnv, spec.model ?? "llama.cpp");
  }

  info(): EngineInfo {
    return this.probe;
  }

  protected buildRequest(req: GenerateRequest, stream: boolean): { url: string; body: unknown } {
    const s = req.sampling;
    return {
      url: `${serverRoot(this.spec.baseUrl)}/completion`,
      body: {
        prompt: req.promptIds,
        n_predict: s.maxTokens,
        temperature: s.temperature,
        top_p: s.topP,
        top_k: 0,
        min_p: 0,
        typical_p: 1,
        repeat_penalty: 1,
        presence_penalty: 0,
        frequency_penalty: 0,
        dry_multiplier: 0,
        xtc_probability: 0,
        mirostat: 0,
        samplers: ["top_p", "temperature"],
        n_probs: 1,
        post_sampling_probs: true,
        return_tokens: true,
        cache_prompt: true,
        stream,
        ...(s.seed !== undefined ? { seed: s.seed } : {}),
      },
    };
  }

  protected readPiece(json: unknown): Piece | undefined {
    return readLlamaCpp(json);
  }

  async reload(): Promise<void> {
    throw new EngineError(
      `llama.cpp (${serverRoot(this.spec.baseUrl)}) cannot load new weights: it has no full-weight update. Train through a vllm or sglang engine; use llama-cpp to evaluate.`,
      "failed",
    );
  }
}

/**
 * One llama-server `/completion` response or stream event, with post-sampling probabilities:
 * each `completion_probabilities` entry's `prob` is the sampled token's (an entry with only a raw
 * `logprob` is refused); ids from `tokens`, else the entries' `id`.
 */
export function readLlamaCpp(json: unknown): Piece | undefined {
  const o = json as Record<string, unknown> | undefined;
  if (!o || typeof o !== "object") return undefined;
  const probs = Array.isArray(o.completion_probabilities) ? (o.completion_probabilities as Record<string, unknown>[]) : [];
  const ids: number[] = Array.isArray(o.tokens) && o.tokens.length > 0 ? o.tokens.map(Number) : probs.map((p) => Number(p.id));
  if (probs.length !== ids.length)
    throw new EngineError(`llama.cpp returned ${ids.length} tokens but ${probs.length} probabilities; send n_probs`, "bad-response");
  const logprobs = probs.map((p, i) => {
    if (p.id !== undefined && Number(p.id) !== ids[i])
      throw new EngineError(`llama.cpp's probability ${i} is for token ${String(p.id)}, not the sampled ${ids[i]}`, "bad-response");
    if (typeof p.prob === "number") return Math.log(p.prob);
    throw new EngineError(
      `llama.cpp's completion_probabilities[${i}] has no post-sampling prob; this llama-server predates post_sampling_probs (its logprobs would be the model's raw ones)`,
      "bad-response",
    );
  });
  const piece: Piece = { ids, logprobs };
  if (o.stop === true || (o.stop_type !== undefined && o.stop_type !== "none")) {
    if (o.stop_type === "limit" || o.stopped_limit === true) piece.finish = "length";
    else piece.finish = "stop";
  }
  return ids.length > 0 || piece.finish ? piece : undefined;
}
