/**
 * A model behind a hosted API, asked in text: Anthropic's Messages API or an OpenAI-compatible
 * Chat Completions API. No token ids, no logprobs — a synthesis generator, a rubric judge, or an
 * Evaluation's policy through the proxy's pass-through (proxy/passthrough.ts). The key is read
 * from its environment variable at the moment of asking, sent only in that API's auth header and
 * never written anywhere (an error message that echoes it has it replaced).
 */
import type { ResolvedHostedApi, ResolvedModel } from "../../compiler/contract/plan.js";
import { ReinsError } from "../../compiler/contract/problem.js";
import { isRedirect, redirectRefused } from "./http.js";

export interface HostedAsk {
  system: string;
  user: string;
  maxTokens: number;
  temperature: number;
}

/** Why a hosted API gave no text: its key is not set, the request failed, or the answer had no text. */
export class HostedApiError extends Error {
  constructor(
    readonly kind: "key-missing" | "request-failed" | "answer-invalid",
    message: string,
  ) {
    super(message);
  }
}

/** The key from its variable, or HostedApiError("key-missing"). */
export function hostedKey(api: ResolvedHostedApi, env: NodeJS.ProcessEnv): string {
  const key = env[api.apiKeyEnv];
  if (!key) throw new HostedApiError("key-missing", `the environment variable ${api.apiKeyEnv} holding the ${api.api} key is not set`);
  return key;
}

/**
 * Before a run starts: every hosted Model it asks (its policy, its rubric judges) has its key in
 * the environment; otherwise HostedKeyMissing naming the variables (never a value).
 */
export function requireHostedKeys(models: readonly (ResolvedModel | undefined)[], env: NodeJS.ProcessEnv = process.env): void {
  const missing = new Map<string, string>();
  for (const m of models) {
    if (m?.engine.type === "hosted" && !env[m.engine.apiKeyEnv]) missing.set(m.engine.apiKeyEnv, m.name);
  }
  if (missing.size === 0) return;
  const list = [...missing].map(([variable, model]) => `${variable} (Model ${model})`).join(", ");
  throw new ReinsError("HostedKeyMissing", `The run asks a hosted model whose key is not set: ${list}. Nothing was run.`);
}

/** The API's URL for an endpoint path of its dialect ("/messages", "/chat/completions", …). */
export function hostedUrl(api: ResolvedHostedApi, endpoint: string): string {
  return api.api === "anthropic-messages" ? `${api.baseUrl}/v1${endpoint}` : `${api.baseUrl}${endpoint}`;
}

/** The auth and version headers the API expects, with JSON content. */
export function hostedHeaders(api: ResolvedHostedApi, key: string): Record<string, string> {
  return api.api === "anthropic-messages"
    ? { "content-type": "application/json", "x-api-key": key, "anthropic-version": "2023-06-01" }
    : { "content-type": "application/json", authorization: `Bearer ${key}` };
}

/** One system + user exchange; the answer's text. */
export async function askHostedText(api: ResolvedHostedApi, ask: HostedAsk, env: NodeJS.ProcessEnv = process.env, signal?: AbortSignal): Promise<string> {
  const key = hostedKey(api, env);
  const anthropic = api.api === "anthropic-messages";
  const url = hostedUrl(api, anthropic ? "/messages" : "/chat/completions");
  const body = anthropic
    ? { model: api.model, max_tokens: ask.maxTokens, temperature: ask.temperature, system: ask.system, messages: [{ role: "user", content: ask.user }] }
    : {
        model: api.model,
        max_tokens: ask.maxTokens,
        temperature: ask.temperature,
        messages: [
          { role: "system", content: ask.system },
          { role: "user", content: ask.user },
        ],
      };
  const timeout = AbortSignal.timeout(api.timeoutSeconds * 1000);
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: hostedHeaders(api, key),
      body: JSON.stringify(body),
      redirect: "manual",
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new HostedApiError("request-failed", `${url} could not be reached: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
  }
  if (isRedirect(res)) throw new HostedApiError("request-failed", redirectRefused(url, res));
  const text = await res.text();
  if (!res.ok) throw new HostedApiError("request-failed", `${url} answered HTTP ${res.status}: ${text.slice(0, 300).replaceAll(key, "<key>")}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new HostedApiError("answer-invalid", `${url} answered with something that is not JSON`);
  }
  const answer = anthropic ? anthropicText(json) : openaiText(json);
  if (answer === undefined) throw new HostedApiError("answer-invalid", `${url} answered without text`);
  return answer;
}

function anthropicText(json: unknown): string | undefined {
  const content = (json as { content?: unknown }).content;
  if (!Array.isArray(content)) return undefined;
  const texts = content.filter(
    (b): b is { type: "text"; text: string } => typeof b === "object" && b !== null && b.type === "text" && typeof b.text === "string",
  );
  return texts.length > 0 ? texts.map((b) => b.text).join("") : undefined;
}

function openaiText(json: unknown): string | undefined {
  const choices = (json as { choices?: unknown }).choices;
  const content = Array.isArray(choices) ? (choices[0] as { message?: { content?: unknown } } | undefined)?.message?.content : undefined;
  return typeof content === "string" ? content : undefined;
}
