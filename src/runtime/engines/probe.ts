/**
 * The capability probe an engine runs when it starts: GET the informational routes vLLM, SGLang
 * and llama.cpp servers offer (a 404 is an answer, not an error), then decide from what answered
 * which server runs there, its version, its logprob mode, the routes that matter (generate,
 * reload, pause/resume) and its context length. Route names drift between versions, so routes are
 * taken from the server's own /openapi.json where it has one, never assumed from one version.
 */
import { ReinsError } from "../../compiler/contract/problem.js";
import { CODES } from "../../compiler/contract/codes.js";
import { EngineError, type EngineInfo, type LogprobsMode } from "./engine.js";
import { buildHeaders, serverRoot } from "./http.js";

export const PROBE_PATHS = [
  "/version",
  "/v1/models",
  "/get_model_info",
  "/server_info?config_format=json",
  "/get_server_info",
  "/props",
  "/openapi.json",
] as const;
export type ProbePath = (typeof PROBE_PATHS)[number];

/** What each probed route answered: its JSON body, or undefined (404, error status, not JSON). */
export type ProbeAnswers = Partial<Record<ProbePath, unknown>>;

export type ServerType = "vllm" | "sglang" | "llama-cpp";
const SERVER_NAME = { vllm: "vllm", sglang: "sglang", "llama-cpp": "llama.cpp" } as const satisfies Record<ServerType, EngineInfo["server"]>;
/** What each server returns when nothing says otherwise (llama.cpp: reins asks for post-sampling probabilities). */
const DEFAULT_MODE: Record<ServerType, LogprobsMode> = { vllm: "raw", sglang: "temperature", "llama-cpp": "processed" };

/**
 * GET every probe route of the server at `baseUrl` at once; a route that fails or is slower than
 * `timeoutMs` (vLLM's /server_info collects its environment on the first call) counts as absent.
 * A server that answers none is unreachable (an EngineError whose code carries the hint).
 */
export async function probeServer(baseUrl: string, apiKeyEnv: string | undefined, timeoutMs = 30_000): Promise<ProbeAnswers> {
  const root = serverRoot(baseUrl);
  const headers = buildHeaders(apiKeyEnv);
  delete headers["content-type"];
  const answers: ProbeAnswers = {};
  let reached = false;
  let lastError = "";
  await Promise.all(
    PROBE_PATHS.map(async (path) => {
      try {
        const res = await fetch(root + path, { headers, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
        reached = true;
        if (!res.ok) {
          await res.body?.cancel().catch(() => undefined);
          return;
        }
        answers[path] = await res.json().catch(() => undefined);
      } catch (err) {
        lastError = (err as Error).message;
      }
    }),
  );
  if (!reached) throw new EngineError(`cannot reach the inference server at ${root}: ${lastError}`, "unreachable");
  return answers;
}

/**
 * The probe's result for an engine of `type`: which server answered, and what it offers.
 * `asserted` is the spec's logprobsMode, used where the server does not say (a server that says
 * otherwise is an error). A server of another kind than `type` is an EngineMismatch.
 */
export function readProbe(type: ServerType, answers: ProbeAnswers, asserted?: LogprobsMode): EngineInfo {
  const found = identifyServer(answers);
  if (found !== type) {
    const said = found ? `a ${SERVER_NAME[found]} server answers there` : "the server there answers none of the probes of a vLLM, SGLang or llama.cpp server";
    throw new ReinsError(
      "EngineMismatch",
      `The Model's engine is ${type}, but ${said}.`,
      found ? `Set the engine's type to ${found}, or point baseUrl at a ${SERVER_NAME[type]} server.` : CODES.EngineMismatch,
    );
  }
  const paths = openapiPaths(answers);
  const observed = observedMode(type, answers);
  if (observed && asserted && observed !== asserted) {
    throw new ReinsError(
      "EngineMismatch",
      `The Model says the server returns ${asserted} logprobs, but the ${SERVER_NAME[type]} server reports ${observed}.`,
      "Remove logprobsMode from the engine, or restart the server with the mode you meant.",
    );
  }
  const info: EngineInfo = {
    type,
    server: SERVER_NAME[type],
    version: readVersion(type, answers),
    logprobsMode: observed ?? asserted ?? DEFAULT_MODE[type],
    logprobsModeFrom: observed ? "server" : asserted ? "spec" : "default",
    routes: readRoutes(type, paths),
  };
  const maxModelLen = readMaxModelLen(answers);
  if (maxModelLen !== undefined) info.maxModelLen = maxModelLen;
  const modelPath = str(obj(arr(obj(answers["/v1/models"])?.data)?.[0])?.root) ?? str(obj(answers["/get_model_info"])?.model_path);
  if (modelPath !== undefined && type !== "llama-cpp") info.modelPath = modelPath;
  return info;
}

function identifyServer(a: ProbeAnswers): ServerType | undefined {
  const props = obj(a["/props"]);
  if (props && ("default_generation_settings" in props || "build_info" in props)) return "llama-cpp";
  const owner = str(obj(arr(obj(a["/v1/models"])?.data)?.[0])?.owned_by);
  if (owner === "llamacpp") return "llama-cpp";
  const paths = openapiPaths(a);
  if (owner === "sglang" || obj(a["/get_model_info"]) || paths.has("/update_weights_from_disk")) return "sglang";
  if (
    owner === "vllm" ||
    obj(a["/server_info?config_format=json"])?.vllm_config !== undefined ||
    (str(obj(a["/version"])?.version) && paths.has("/v1/completions"))
  )
    return "vllm";
  return undefined;
}

function readVersion(type: ServerType, a: ProbeAnswers): string | null {
  if (type === "llama-cpp") {
    return str(obj(a["/props"])?.build_info) ?? null;
  }
  return str(obj(a["/version"])?.version) ?? str(obj(a["/server_info?config_format=json"])?.version) ?? str(obj(a["/get_server_info"])?.version) ?? null;
}

/** The mode the server itself reports: vLLM's model_config.logprobs_mode in /server_info (dev mode). */
function observedMode(type: ServerType, a: ProbeAnswers): LogprobsMode | undefined {
  if (type !== "vllm") return undefined;
  const mode = str(obj(obj(obj(a["/server_info?config_format=json"])?.vllm_config)?.model_config)?.logprobs_mode);
  if (mode === "raw_logprobs") return "raw";
  if (mode === "processed_logprobs") return "processed";
  if (mode === "raw_logits" || mode === "processed_logits") return "logits";
  return undefined;
}

function readRoutes(type: ServerType, paths: Set<string>): EngineInfo["routes"] {
  const has = (p: string) => paths.has(p);
  if (type === "vllm") {
    const routes: EngineInfo["routes"] = { generate: "/v1/completions" };
    if (has("/collective_rpc")) routes.reload = "/collective_rpc";
    if (has("/pause") && has("/resume")) Object.assign(routes, { pause: "/pause", resume: "/resume" });
    if (has("/reset_prefix_cache")) routes.resetCache = "/reset_prefix_cache";
    if (has("/update_weight_version")) routes.updateVersion = "/update_weight_version";
    return routes;
  }
  if (type === "sglang") {
    // Without an openapi.json, assume the long-standing /update_weights_from_disk.
    const routes: EngineInfo["routes"] = { generate: "/generate", reload: "/update_weights_from_disk" };
    if (paths.size > 0 && !has("/update_weights_from_disk")) delete routes.reload;
    if (has("/pause_generation") && has("/continue_generation")) Object.assign(routes, { pause: "/pause_generation", resume: "/continue_generation" });
    if (has("/flush_cache")) routes.resetCache = "/flush_cache";
    return routes;
  }
  return { generate: "/completion" };
}

function readMaxModelLen(a: ProbeAnswers): number | undefined {
  const fromModels = obj(arr(obj(a["/v1/models"])?.data)?.[0])?.max_model_len;
  if (typeof fromModels === "number") return fromModels;
  const nCtx = obj(obj(a["/props"])?.default_generation_settings)?.n_ctx;
  if (typeof nCtx === "number") return nCtx;
  const ctx = obj(a["/get_server_info"])?.context_length ?? obj(a["/server_info?config_format=json"])?.context_length;
  return typeof ctx === "number" ? ctx : undefined;
}

function openapiPaths(a: ProbeAnswers): Set<string> {
  const paths = obj(obj(a["/openapi.json"])?.paths);
  return new Set(paths ? Object.keys(paths) : []);
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}
function arr(v: unknown): unknown[] | undefined {
  return Array.isArray(v) ? v : undefined;
}
function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}
