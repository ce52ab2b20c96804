/** A model behind a hosted API (Anthropic Messages, OpenAI-compatible Chat Completions): where it is and whose key. */
import { z } from "zod";
import { PositiveInt } from "./common.js";
import { HOSTED_APIS, type HostedApi } from "../contract/vocabulary.js";

export const HostedApiFields = {
  api: z.enum(HOSTED_APIS as [HostedApi, ...HostedApi[]]).describe("The hosted API: Anthropic's Messages API or an OpenAI-compatible Chat Completions API."),
  model: z.string().min(1).max(200).describe("The hosted model's name, e.g. claude-sonnet-4-5 or gpt-4.1."),
  baseUrl: z.string().url().optional().describe("Default https://api.anthropic.com (anthropic-messages) or https://api.openai.com/v1 (openai-chat)."),
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
    .optional()
    .describe(
      "The environment variable holding the key (default ANTHROPIC_API_KEY or OPENAI_API_KEY); the key is read when asking and never written to a plan, a record, a report or a family.",
    ),
  timeoutSeconds: PositiveInt.max(3600).optional().describe("How long one answer may take (default 300)."),
};
