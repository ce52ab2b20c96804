/**
 * SGLang's native server. Completions: `POST /generate` with `input_ids`, every sampler set in
 * `sampling_params` (top_k -1 = off, min_p 0, no penalties), `return_logprob` for the output
 * tokens only; ids and logprobs from `meta_info.output_token_logprobs` ([logprob, id, text]),
 * the finish from `meta_info.finish_reason.type` (abort is an engine failure), the weights
 * version from `meta_info.weight_version`. Streaming: SSE events that repeat the whole output so
 * far (SGLang's default) or carry only new tokens (incremental streaming); `completion_tokens`
 * tells which, so both give the same deltas.
 * Reload: `POST /update_weights_from_disk {model_path, weight_version}`. SGLang holds new calls
 * and waits for in-flight ones while it loads (its model-update lock), so reins does not pause
 * generation around it: `/pause_generation` would abort in-flight calls or finish them on the
 * new weights.
 */
import type { ResolvedEngine } from "../../compiler/contract/plan.js";
import { EngineError, type EngineFactory, type EngineInfo, type GenerateRequest } from "./engine.js";
import { buildHeaders, HttpEngine, postJson, readJson, serverRoot, type Piece } from "./http.js";
import { probeServer, readProbe } from "./probe.js";

type Spec = Extract<ResolvedEngine, { type: "sglang" }>;

export const createSglangEngine: EngineFactory<Spec> = async (spec) => {
  const probe = readProbe("sglang", await probeServer(spec.baseUrl, spec.apiKeyEnv), spec.logprobsMode);
  return new SglangEngine(spec, probe);
};

/** A Piece plus the count of tokens the server says it has produced so far. */
type SglangPiece = Piece & { total?: number };

export class SglangEngine extends HttpEngine {
  readonly type = "sglang";

  constructor(
    private readonly spec: Spec,
    private readonly probe: EngineInfo,
  ) {
    super(spec.baseUrl, spec.apiKeyEnv, spec.model);
  }

  info(): EngineInfo {
    return this.probe;
  }

  protected buildRequest(req: GenerateRequest, stream: boolean): { url: string; body: unknown } {
    const s = req.sampling;
    return {
      url: `${serverRoot(this.spec.baseUrl)}${this.probe.routes.generate}`,
      body: {
        input_ids: req.promptIds,
        sampling_params: {
          max_new_tokens: s.maxTokens,
          temperature: s.temperature,
          top_p: s.topP,
          top_k: -1,
          min_p: 0,
          repetition_penalty: 1,
          frequency_penalty: 0,
          presence_penalty: 0,
          stop_token_ids: s.stopIds,
          skip_special_tokens: false,
          ...(s.seed !== undefined ? { sampling_seed: s.seed } : {}),
        },
        return_logprob: true,
        logprob_start_len: -1,
        stream,
      },
    };
  }

  protected readPiece(json: unknown): SglangPiece | undefined {
    return readSglang(json);
  }

  /** Cumulative events (as many tokens as produced so far) become their new tail. */
  protected override streamDelta(piece: SglangPiece, seen: number): Piece {
    const cumulative = piece.total !== undefined ? piece.ids.length === piece.total && piece.total >= seen : false;
    if (!cumulative || seen === 0) return piece;
    return { ...piece, ids: piece.ids.slice(seen), logprobs: piece.logprobs.slice(seen) };
  }

  async reload(version: string, dir: string): Promise<void> {
    const route = this.probe.routes.reload;
    const root = serverRoot(this.spec.baseUrl);
    if (!route) throw new EngineError(`the SGLang server at ${root} offers no /update_weights_from_disk (not in its /openapi.json)`, "failed");
    await this.runReload(version, async () => {
      const out = (await readJson(
        await postJson(root + route, { model_path: dir, weight_version: version }, buildHeaders(this.spec.apiKeyEnv)),
        root + route,
      )) as { success?: unknown; message?: unknown };
      if (out?.success !== true)
        throw new EngineError(`SGLang could not load ${dir}: ${typeof out?.message === "string" ? out.message : JSON.stringify(out).slice(0, 200)}`, "failed");
    });
  }
}

/** One SGLang `/generate` response or stream event. */
export function readSglang(json: unknown): SglangPiece | undefined {
  const meta = (json as { meta_info?: Record<string, unknown> } | undefined)?.meta_info;
  if (!meta || typeof meta !== "object") return undefined;
  const entries = meta.output_token_logprobs;
  const reason = meta.finish_reason as { type?: unknown; matched?: unknown; message?: unknown } | null | undefined;
  if (reason?.type === "abort")
    throw new EngineError(`SGLang aborted the call: ${typeof reason.message === "string" ? reason.message : "no reason given"}`, "failed");
  if (!Array.isArray(entries)) return undefined;
  const ids: number[] = [];
  const logprobs: number[] = [];
  for (const e of entries) {
    if (!Array.isArray(e) || typeof e[1] !== "number")
      throw new EngineError(`meta_info.output_token_logprobs holds ${JSON.stringify(e)}, not [logprob, id, text]`, "bad-response");
    ids.push(e[1]);
    logprobs.push(typeof e[0] === "number" ? e[0] : 0);
  }
  const piece: SglangPiece = { ids, logprobs };
  if (reason?.type === "length") piece.finish = "length";
  else if (reason?.type === "stop") {
    piece.finish = "stop";
    if (typeof reason.matched === "number") piece.stopId = reason.matched;
  }
  if (typeof meta.weight_version === "string" && meta.weight_version !== "") piece.weightsVersion = meta.weight_version;
  if (typeof meta.completion_tokens === "number") piece.total = meta.completion_tokens;
  return piece;
}
