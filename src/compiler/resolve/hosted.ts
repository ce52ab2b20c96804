/** A hosted API's fields with their defaults: the API's public address and its usual key variable. */
import type { ResolvedHostedApi } from "../contract/plan.js";
import type { HostedApi } from "../contract/vocabulary.js";

const DEFAULT_BASE_URL: Record<HostedApi, string> = { "anthropic-messages": "https://api.anthropic.com", "openai-chat": "https://api.openai.com/v1" };
const DEFAULT_KEY_ENV: Record<HostedApi, string> = { "anthropic-messages": "ANTHROPIC_API_KEY", "openai-chat": "OPENAI_API_KEY" };

export function resolveHostedApi(spec: { api: HostedApi; model: string; baseUrl?: string; apiKeyEnv?: string; timeoutSeconds?: number }): ResolvedHostedApi {
  return {
    api: spec.api,
    model: spec.model,
    baseUrl: (spec.baseUrl ?? DEFAULT_BASE_URL[spec.api]).replace(/\/+$/, ""),
    apiKeyEnv: spec.apiKeyEnv ?? DEFAULT_KEY_ENV[spec.api],
    timeoutSeconds: spec.timeoutSeconds ?? 300,
  };
}
