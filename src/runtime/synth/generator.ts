/**
 * The generator of a synthesis: asked once per candidate, it answers with text holding one
 * TaskFamily. Scripted: the answer files, in order. Hosted: Anthropic's Messages API or an
 * OpenAI-compatible Chat Completions API (../engines/hosted-api.ts).
 */
import { readFileSync } from "node:fs";
import type { ResolvedGenerator, ResolvedHostedGenerator } from "../../compiler/index.js";
import { askHostedText, HostedApiError } from "../engines/hosted-api.js";

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

const GENERATOR_CODES = {
  "key-missing": "GeneratorKeyMissing",
  "request-failed": "GeneratorRequestFailed",
  "answer-invalid": "GeneratorAnswerInvalid",
} as const;

async function askHosted(g: ResolvedHostedGenerator, prompt: GeneratorPrompt, env: NodeJS.ProcessEnv, signal?: AbortSignal): Promise<string> {
  try {
    return await askHostedText(g, { system: prompt.system, user: prompt.user, maxTokens: g.maxTokens, temperature: g.temperature }, env, signal);
  } catch (e) {
    if (e instanceof HostedApiError) throw new GeneratorError(GENERATOR_CODES[e.kind], e.message);
    throw e;
  }
}
