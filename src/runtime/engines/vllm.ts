/**
 * vLLM behind its OpenAI-compatible server. Completions: `POST /v1/completions` with the prompt as
 * token ids, every sampler set (top_k 0, min_p 0, no penalties: only temperature and top_p act),
 * `logprobs: 1`, `return_token_ids` (ids in `token_ids`, per-chunk deltas when streaming) and
 * `return_tokens_as_token_ids` (older servers: ids from "token_id:N" tokens).
 * Reload (the routes vLLM ≥ 0.16 serves with VLLM_SERVER_DEV_MODE=1, taken from the probe):
 * `/pause?mode=wait` (in-flight calls finish on the old weights) → `/collective_rpc` reload_weights
 * from the new directory → `/reset_prefix_cache` → `/update_weight_version` when offered →
 * `/resume`, which is sent also when the reload failed.
 */
import type { ResolvedEngine } from "../../compiler/contract/plan.js";
import { EngineError, type EngineFactory, type EngineInfo, type GenerateRequest } from "./engine.js";
import { buildHeaders, HttpEngine, postJson, readJson, serverRoot, type Piece } from "./http.js";
import { readCompletions } from "./openai-compatible.js";
import { probeServer, readProbe } from "./probe.js";
import { CODES } from "../../compiler/contract/codes.js";
import { ReinsError } from "../../compiler/contract/problem.js";

type Spec = Extract<ResolvedEngine, { type: "vllm" }> & { baseUrl: string };

/**
 * The engine of a vLLM server at `baseUrl`. A spec with `serve` reaches here with the baseUrl of
 * the server reins started (control/served-engine.ts); without one, the command starts no server.
 */
export const createVllmEngine: EngineFactory<Extract<ResolvedEngine, { type: "vllm" }>> = async (spec) => {
  if (spec.baseUrl === undefined) {
    throw new ReinsError(
      "EngineServeUnsupported",
      "The Model's vllm engine has serve (reins starts the server), which only reins eval and reins run do; this command starts no server.",
      CODES.EngineServeUnsupported,
    );
  }
  const probe = readProbe("vllm", await probeServer(spec.baseUrl, spec.apiKeyEnv), spec.logprobsMode);
  return new VllmEngine({ ...spec, baseUrl: spec.baseUrl }, probe);
};

export class VllmEngine extends HttpEngine {
  readonly type = "vllm";

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
      url: `${serverRoot(this.spec.baseUrl)}/v1/completions`,
      body: {
        model: this.spec.model,
        prompt: req.promptIds,
        max_tokens: s.maxTokens,
        temperature: s.temperature,
        top_p: s.topP,
        top_k: 0,
        min_p: 0,
        repetition_penalty: 1,
        frequency_penalty: 0,
        presence_penalty: 0,
        logprobs: 1,
        stop_token_ids: s.stopIds,
        skip_special_tokens: false,
        add_special_tokens: false,
        return_tokens_as_token_ids: true,
        return_token_ids: true,
        stream,
        ...(s.seed !== undefined ? { seed: s.seed } : {}),
      },
    };
  }

  protected readPiece(json: unknown): Piece | undefined {
    return readCompletions(json);
  }

  async reload(version: string, dir: string): Promise<void> {
    const r = this.probe.routes;
    if (!r.reload || !r.pause || !r.resume) {
      throw new EngineError(
        `the vLLM server at ${serverRoot(this.spec.baseUrl)} offers no weight reload (its /openapi.json lists no /collective_rpc, /pause and /resume); start it with VLLM_SERVER_DEV_MODE=1`,
        "failed",
      );
    }
    const root = serverRoot(this.spec.baseUrl);
    const headers = buildHeaders(this.spec.apiKeyEnv);
    const call = async (path: string, body: unknown) => readJson(await postJson(root + path, body, headers), root + path);
    await this.runReload(version, async () => {
      await call(`${r.pause}?mode=wait`, {});
      let failure: unknown;
      try {
        const out = (await call(r.reload!, { method: "reload_weights", kwargs: { weights_path: dir } })) as { results?: unknown };
        if (!Array.isArray(out?.results))
          throw new EngineError(`${root}${r.reload} answered ${JSON.stringify(out).slice(0, 200)} to reload_weights`, "bad-response");
        if (r.resetCache) await call(r.resetCache, {});
        if (r.updateVersion) await call(r.updateVersion, { new_version: version });
      } catch (err) {
        failure = err;
      }
      // Resume in any case: a failed reload must not leave the server paused.
      await call(r.resume!, {}).catch((err: unknown) => {
        failure ??= err;
      });
      if (failure) throw failure;
    });
  }
}
