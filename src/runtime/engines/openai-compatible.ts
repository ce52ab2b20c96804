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
import { type Engine, EngineError, type EngineFactory, type GenerateChunk, type GenerateRequest, type GenerateResult } from "./engine.js";

type Spec = Extract<ResolvedEngine, { type: "openai-compatible" }>;

export const createOpenAICompatibleEngine: EngineFactory<Spec> = async (spec) => new OpenAICompatibleEngine(spec);

interface Piece {
  ids: number[];
  logprobs: number[];
  finish?: "stop" | "length";
  stopId?: number;
}

export class OpenAICompatibleEngine implements Engine {
  readonly type = "openai-compatible";
  private weightsVersion: string;

  constructor(private readonly spec: Spec) {
    this.weightsVersion = spec.model;
  }

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    const res = await this.post(req, false);
    let json: unknown;
    try {
      json = await res.json();
    } catch {
      throw new EngineError(`${this.endpoint()} answered with a body that is not JSON`, "bad-response");
    }
    const piece = this.api() === "llama-server" ? readLlamaServer(json) : readCompletions(json);
    if (!piece) throw new EngineError(`${this.endpoint()} answered without token ids and logprobs`, "bad-response");
    return this.finish([piece], req);
  }

  async generateStream(req: GenerateRequest, onChunk: (c: GenerateChunk) => void): Promise<GenerateResult> {
    const res = await this.post(req, true);
    const pieces: Piece[] = [];
    const read = this.api() === "llama-server" ? readLlamaServer : readCompletions;
    for await (const data of sseData(res, req.signal)) {
      if (data === "[DONE]") break;
      let json: unknown;
      try {
        json = JSON.parse(data);
      } catch {
        throw new EngineError(`${this.endpoint()} streamed an event that is not JSON`, "bad-response");
      }
      const piece = read(json);
      if (!piece) continue;
      pieces.push(piece);
      if (piece.ids.length > 0) onChunk({ ids: piece.ids, logprobs: piece.logprobs });
    }
    return this.finish(pieces, req);
  }

  async reload(version: string): Promise<void> {
    // The server reloads its own weights; the engine only labels later completions.
    this.weightsVersion = version;
  }

  private api(): "completions" | "llama-server" {
    return this.spec.api ?? "completions";
  }

  private endpoint(): string {
    const base = this.spec.baseUrl.replace(/\/+$/, "");
    if (this.api() === "llama-server") return `${base.replace(/\/v1$/, "")}/completion`;
    return /\/v1$/.test(base) ? `${base}/completions` : `${base}/v1/completions`;
  }

  private async post(req: GenerateRequest, stream: boolean): Promise<Response> {
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
    const headers: Record<string, string> = { "content-type": "application/json" };
    const key = this.spec.apiKeyEnv ? process.env[this.spec.apiKeyEnv] : undefined;
    if (key) headers.authorization = `Bearer ${key}`;
    let res: Response;
    try {
      res = await fetch(this.endpoint(), { method: "POST", headers, body: JSON.stringify(body), ...(req.signal ? { signal: req.signal } : {}) });
    } catch (err) {
      if (req.signal?.aborted) throw new EngineError("generation aborted", "failed");
      throw new EngineError(`cannot reach ${this.endpoint()}: ${(err as Error).message}`, "unreachable");
    }
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      throw new EngineError(`${this.endpoint()} answered HTTP ${res.status}: ${text.slice(0, 300)}`, "failed");
    }
    return res;
  }

  private finish(pieces: Piece[], req: GenerateRequest): GenerateResult {
    const ids: number[] = [];
    const logprobs: number[] = [];
    let finish: "stop" | "length" = "stop";
    let stopId: number | undefined;
    for (const p of pieces) {
      for (let i = 0; i < p.ids.length; i++) {
        ids.push(p.ids[i]!);
        logprobs.push(p.logprobs[i] ?? 0);
      }
      if (p.finish) finish = p.finish;
      if (p.stopId !== undefined) stopId = p.stopId;
    }
    const stops = req.sampling.stopIds;
    const last = ids[ids.length - 1];
    if (finish === "stop" && stops.length > 0 && (last === undefined || !stops.includes(last))) {
      ids.push(stopId !== undefined && stops.includes(stopId) ? stopId : stops[0]!);
      logprobs.push(0);
    }
    return { ids, logprobs, finish, weightsVersion: this.weightsVersion };
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

/** The `data:` payloads of a server-sent-event response body. */
async function* sseData(res: Response, signal?: AbortSignal): AsyncGenerator<string> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = res.body.getReader();
  try {
    for (;;) {
      if (signal?.aborted) throw new EngineError("generation aborted", "failed");
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
        const data = block
          .split(/\r?\n/)
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, ""))
          .join("\n");
        if (data) yield data;
      }
    }
  } catch (err) {
    if (err instanceof EngineError) throw err;
    throw new EngineError(`stream from the engine broke: ${(err as Error).message}`, "failed");
  } finally {
    reader.releaseLock();
  }
}
