/**
 * The generator of a synthesis: asked once per candidate, it answers with text holding one
 * TaskFamily. Scripted: the answer files, in order. Hosted: Anthropic's Messages API or an
 * OpenAI-compatible Chat Completions API, the key read from its environment variable at the
 * moment of asking and sent only to that API (never written anywhere).
 */
import { readFileSync } from "node:fs";
import type { ResolvedGenerator, ResolvedHostedGenerator } from "../../compiler/index.js";

export interface GeneratorPrompt {
  system: string;
  user: string;
}

export interface Generator {
  /** What the generator is, for the report and the families' provenance (no key). */
  readonly label: string;
  answer(index: number, prompt: GeneratorPrompt, signal?: AbortSignal): Promise<string>;
}

/** A generator that could not answer: its reason, never the key. */
export class GeneratorError extends Error {
  constructor(
    readonly code: "GeneratorKeyMissing" | "GeneratorRequestFailed" | "GeneratorAnswerInvalid",
    message: string,
  ) {
    super(message);
  }
}

export function createGenerator(g: ResolvedGenerator, env: NodeJS.ProcessEnv = process.env): Generator {
  if (g.type === "scripted") {
    return {
      label: "scripted",
      answer: async (index) => {
        const file = g.answers[index];
        if (file === undefined) throw new GeneratorError("GeneratorAnswerInvalid", `the scripted generator has no answer ${index + 1}`);
        return readFileSync(file, "utf8");
      },
    };
  }
  return {
    label: `${g.api}:${g.model}`,
    answer: (_index, prompt, signal) => askHosted(g, prompt, env, signal),
  };
}

async function askHosted(g: ResolvedHostedGenerator, prompt: GeneratorPrompt, env: NodeJS.ProcessEnv, signal?: AbortSignal): Promise<string> {
  const key = env[g.apiKeyEnv];
  if (!key) throw new GeneratorError("GeneratorKeyMissing", `the environment variable ${g.apiKeyEnv} holding the ${g.api} key is not set`);
  const anthropic = g.api === "anthropic-messages";
  const url = anthropic ? `${g.baseUrl}/v1/messages` : `${g.baseUrl}/chat/completions`;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (anthropic) {
    headers["x-api-key"] = key;
    headers["anthropic-version"] = "2023-06-01";
  } else headers.authorization = `Bearer ${key}`;
  const body = anthropic
    ? { model: g.model, max_tokens: g.maxTokens, temperature: g.temperature, system: prompt.system, messages: [{ role: "user", content: prompt.user }] }
    : { model: g.model, max_tokens: g.maxTokens, temperature: g.temperature, messages: [{ role: "system", content: prompt.system }, { role: "user", content: prompt.user }] };
  const timeout = AbortSignal.timeout(g.timeoutSeconds * 1000);
  let res: Response;
  try {
    res = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new GeneratorError("GeneratorRequestFailed", `${url} could not be reached: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
  }
  const text = await res.text();
  if (!res.ok) throw new GeneratorError("GeneratorRequestFailed", `${url} answered HTTP ${res.status}: ${text.slice(0, 300).replaceAll(key, "<key>")}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new GeneratorError("GeneratorAnswerInvalid", `${url} answered with something that is not JSON`);
  }
  const answer = anthropic ? anthropicText(json) : openaiText(json);
  if (answer === undefined) throw new GeneratorError("GeneratorAnswerInvalid", `${url} answered without text`);
  return answer;
}

function anthropicText(json: unknown): string | undefined {
  const content = (json as { content?: unknown }).content;
  if (!Array.isArray(content)) return undefined;
  const texts = content.filter((b): b is { type: "text"; text: string } => typeof b === "object" && b !== null && b.type === "text" && typeof b.text === "string");
  return texts.length > 0 ? texts.map((b) => b.text).join("") : undefined;
}

function openaiText(json: unknown): string | undefined {
  const choices = (json as { choices?: unknown }).choices;
  const content = Array.isArray(choices) ? (choices[0] as { message?: { content?: unknown } } | undefined)?.message?.content : undefined;
  return typeof content === "string" ? content : undefined;
}
