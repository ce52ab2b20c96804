/**
 * Engines behind an HTTP server that completes token-id prompts with logprobs:
 * - `api: completions` (default): vLLM / SGLang `POST {baseUrl}/completions` with `prompt` as token
 *   ids, `logprobs: 1`, `return_tokens_as_token_ids` (tokens come back as "token_id:N") and
 *   `return_token_ids` (a `token_ids` array, newer vLLM); both are read when present.
 * - `api: llama-server`: llama.cpp `POST /completion` with `prompt` as token ids, `n_probs: 1`,
 *   `return_tokens`; ids from `tokens` or `completion_probabilities[].id`.
 * A completion that stopped on a stop token the server left out of its ids gets that id appended
 * (logprob 0), so the raw completion always ends the way the model ended it.
 */
import type { ResolvedEngine } from "../../compiler/contract/plan.js";
import { EngineError, type EngineFactory, type GenerateRequest } from "./engine.js";
import { HttpEngine, type Piece } from "./http.js";

type Spec = Extract<ResolvedEngine, { type: "openai-compatible" }>;

export const createOpenAICompatibleEngine: EngineFactory<Spec> = async (spec) => new OpenAICompatibleEngine(spec);

export class OpenAICompatibleEngine extends HttpEngine {
  readonly type = "openai-compatible";

  constructor(private readonly spec: Spec) {
    super(spec.baseUrl, spec.apiKeyEnv, spec.model);
  }

  async reload(version: string): Promise<void> {
    // The server reloads its own weights; the engine only labels later completions.
    this.weightsVersion = version;
  }

  protected readPiece(json: unknown): Piece | undefined {
    return this.api() === "llama-server" ? readLlamaServer(json) : readCompletions(json);
  }

  private api(): "completions" | "llama-server" {
    return this.spec.api ?? "completions";
  }

  private endpoint(): string {
    const base = this.spec.baseUrl.replace(/\/+$/, "");
    if (this.api() === "llama-server") return `${base.replace(/\/v1$/, "")}/completion`;
    return /\/v1$/.test(base) ? `${base}/completions` : `${base}/v1/completions`;
  }

  protected buildRequest(req: GenerateRequest, stream: boolean): { url: string; body: unknown } {
    const s = req.sampling;
    const body =
      this.api() === "llama-server"
        ? {
            prompt: req.promptIds,
            n_predict: s.maxTokens,
            temperature: s.temperature,
            top_p: s.topP,
            n_probs: 1,
            return_tokens: true,
            cache_prompt: true,
            stream,
            ...(s.seed !== undefined ? { seed: s.seed } : {}),
          }
        : {
            model: this.spec.model,
            prompt: req.promptIds,
            max_tokens: s.maxTokens,
            temperature: s.temperature,
            top_p: s.topP,
            logprobs: 1,
            stop_token_ids: s.stopIds,
            skip_special_tokens: false,
            return_tokens_as_token_ids: true,
            return_token_ids: true,
            stream,
            ...(s.seed !== undefined ? { seed: s.seed } : {}),
          };
    return { url: this.endpoint(), body };
  }
}

/** One vLLM/SGLang completions response or stream chunk. */
export function readCompletions(json: unknown): Piece | undefined {
  const choice = (json as { choices?: unknown[] })?.choices?.[0] as Record<string, unknown> | undefined;
  if (!choice) return undefined;
  const lp = choice.logprobs as { tokens?: unknown[]; token_logprobs?: unknown[] } | null | undefined;
  let ids: number[] | undefined;
  if (Array.isArray(choice.token_ids)) ids = choice.token_ids.map(Number);
  else if (Array.isArray(lp?.tokens)) {
    ids = lp.tokens.map((t) => {
      const m = /^token_id:(\d+)$/.exec(String(t));
      if (!m) throw new EngineError(`token ${JSON.stringify(t)} is not in token_id:N form; enable return_tokens_as_token_ids`, "bad-response");
      return Number(m[1]);
    });
  }
  const finishReason = choice.finish_reason;
  if (!ids) return finishReason ? { ids: [], logprobs: [], ...finishOf(finishReason, choice.stop_reason) } : undefined;
  const logprobs = Array.isArray(lp?.token_logprobs) ? lp.token_logprobs.map((v) => (typeof v === "number" ? v : 0)) : ids.map(() => 0);
  return { ids, logprobs, ...finishOf(finishReason, choice.stop_reason) };
}

function finishOf(reason: unknown, stopReason: unknown): Pick<Piece, "finish" | "stopId"> {
  const out: Pick<Piece, "finish" | "stopId"> = {};
  if (reason === "length") out.finish = "length";
  else if (reason === "stop") out.finish = "stop";
  if (typeof stopReason === "number") out.stopId = stopReason;
  return out;
}

/** One llama-server `/completion` response or stream chunk. */
export function readLlamaServer(json: unknown): Piece | undefined {
  const o = json as Record<string, unknown> | undefined;
  if (!o || typeof o !== "object") return undefined;
  const probs = Array.isArray(o.completion_probabilities) ? (o.completion_probabilities as Record<string, unknown>[]) : [];
  let ids: number[] = Array.isArray(o.tokens) ? o.tokens.map(Number) : probs.map((p) => Number(p.id));
  const logprobs = probs.map((p) => (typeof p.logprob === "number" ? p.logprob : 0));
  if (ids.length === 0 && probs.length > 0) ids = probs.map((p) => Number(p.id));
  const piece: Piece = { ids, logprobs };
  if (o.stop === true || o.stop_type !== undefined) {
    if (o.stop_type === "limit" || o.stopped_limit === true) piece.finish = "length";
    else if (o.stop === true || o.stop_type === "eos" || o.stop_type === "word") piece.finish = "stop";
  }
  return ids.length > 0 || piece.finish ? piece : undefined;
}
