/**
 * The proxy's per-request limits, checked before the work they bound: body bytes and JSON shape
 * while the body arrives, one message's and one tool-call argument's characters after parsing,
 * the prompt characters that still need tokenizing before the tokenizer runs, context tokens
 * after it. Plus the time a request body and an idle connection may take, and how many requests
 * one rollout may have open at once. Every refusal carries a catalogued code (./refusals.ts).
 *
 * DECISION — the prompt-character bound counts only what must be tokenized (segments neither in
 * the rollout's prefix trie nor in the shared segment cache), against the room the known prefix
 * leaves in the context: `chars > room × promptCharsPerToken` cannot fit unless the new text
 * averages more than that many characters per token. 16 is far above any real text (English ~4.5,
 * code ~3.5, base64 ~1.3; Qwen3's longest token is 128 spaces), so an honest prompt is never refused
 * by it, while the tokenizer's work per call is bounded by the context: for 32K tokens at most
 * 512K characters, about 1 s of tokenizing for typical text and 7 s for the worst (one long run
 * of one letter), which runs off the shared event loop (../model/tokenize-pool.ts).
 */
import type { ResolvedModel } from "../../compiler/contract/plan.js";

export interface ProxyLimits {
  /** Request body bytes, before and after decompression (413). */
  maxBodyBytes: number;
  /** Nesting depth of the request JSON (400): deep nesting costs the parser memory and time. */
  maxJsonDepth: number;
  /** Values (array elements + object members) in the request JSON (400). */
  maxJsonValues: number;
  /** Characters of one message: its text, reasoning and tool-call arguments together (413). */
  maxMessageChars: number;
  /** Characters of one tool-call argument string (413). */
  maxToolArgumentChars: number;
  /** Prompt characters still to tokenize, per context token left (400 context-length). */
  promptCharsPerToken: number;
  /** Requests one rollout may have open at once (429); further ones are refused at once. */
  maxRequestsPerRollout: number;
  /** Time from a request's headers to the end of its body (408). */
  bodyTimeoutMs: number;
  /** An idle keep-alive connection is closed after this; a request's headers must arrive within it. */
  idleTimeoutMs: number;
}

export const DEFAULT_CHARS_PER_TOKEN = 16;

/** The defaults for a model; message and argument sizes follow its context length (× promptCharsPerToken). */
export function defaultLimits(model: Pick<ResolvedModel, "maxContextTokens">): ProxyLimits {
  const promptChars = model.maxContextTokens * DEFAULT_CHARS_PER_TOKEN;
  return {
    maxBodyBytes: 16 * 1024 * 1024,
    maxJsonDepth: 64,
    maxJsonValues: 200_000,
    maxMessageChars: promptChars,
    maxToolArgumentChars: promptChars,
    promptCharsPerToken: DEFAULT_CHARS_PER_TOKEN,
    maxRequestsPerRollout: 32,
    bodyTimeoutMs: 30_000,
    idleTimeoutMs: 60_000,
  };
}

export function resolveLimits(model: Pick<ResolvedModel, "maxContextTokens">, given: Partial<ProxyLimits> = {}): ProxyLimits {
  const limits = { ...defaultLimits(model) };
  for (const [key, value] of Object.entries(given) as [keyof ProxyLimits, number | undefined][]) {
    if (value === undefined) continue;
    if (!(typeof value === "number" && value > 0 && (Number.isInteger(value) || key === "promptCharsPerToken"))) {
      throw new Error(`bug: proxy limit ${key} must be a positive ${key === "promptCharsPerToken" ? "number" : "integer"}, got ${String(value)}`);
    }
    limits[key] = value;
  }
  // Message and argument sizes follow the characters per token the prompt bound allows.
  const promptChars = Math.floor(model.maxContextTokens * limits.promptCharsPerToken);
  if (given.maxMessageChars === undefined) limits.maxMessageChars = promptChars;
  if (given.maxToolArgumentChars === undefined) limits.maxToolArgumentChars = promptChars;
  return limits;
}

/** A proxy's limits: the model's `proxy` block (its `processes` is not a limit), then the caller's. */
export function proxyLimitsOf(model: Pick<ResolvedModel, "maxContextTokens" | "proxy">, given: Partial<ProxyLimits> = {}): ProxyLimits {
  const { processes: _p, ...spec } = model.proxy ?? {};
  return resolveLimits(model, { ...spec, ...given });
}
