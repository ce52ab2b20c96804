/** Synthesis: task families written by a generator model, kept only when they pass the gates. */
import { z } from "zod";
import { documentSchema, Name, PositiveInt } from "./common.js";
import { SandboxSpecSchema } from "./sandbox.js";
import { HOSTED_APIS, type HostedApi } from "../contract/vocabulary.js";

const Phrases = (what: string) => z.array(z.string().min(1).max(2000)).min(1).max(1000).describe(what);

const ScriptedGenerator = z
  .strictObject({
    answers: z
      .array(z.string().min(1))
      .min(1)
      .max(10_000)
      .describe("Files (relative to this spec, inside the project) holding the generator's answers, one per candidate, in order: text with one TaskFamily in a ```yaml block (or the YAML alone)."),
  })
  .describe("A generator that answers from files: for tests, examples and replaying a hosted model's answers.");

const HostedGenerator = z
  .strictObject({
    api: z.enum(HOSTED_APIS as [HostedApi, ...HostedApi[]]).describe("The hosted API: Anthropic's Messages API or an OpenAI-compatible Chat Completions API."),
    model: z.string().min(1).max(200).describe("The hosted model's name, e.g. claude-sonnet-4-5 or gpt-4.1."),
    baseUrl: z.string().url().optional().describe("Default https://api.anthropic.com (anthropic-messages) or https://api.openai.com/v1 (openai-chat)."),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional()
      .describe("The environment variable holding the key (default ANTHROPIC_API_KEY or OPENAI_API_KEY); the key is never written to a plan, a report or a family."),
    maxTokens: PositiveInt.max(200_000).optional().describe("The most tokens one answer may take (default 8192)."),
    temperature: z.number().min(0).max(2).optional().describe("Sampling temperature (default 1)."),
    timeoutSeconds: PositiveInt.max(3600).optional().describe("How long one answer may take (default 300)."),
  })
  .describe("A model behind a hosted API, asked once per candidate.");

export const SynthesisSpecSchema = z
  .strictObject({
    personas: Phrases("Who the tasks are for (\"a support lead at a SaaS company\"); each candidate is asked for one persona × scenario × skill."),
    scenarios: Phrases("What they are doing (\"answering customer tickets from a product FAQ\")."),
    skills: Phrases("The operation a task exercises (\"extract facts from Markdown into JSON\")."),
    count: PositiveInt.max(10_000).describe("How many candidates to ask for: the persona × scenario × skill combinations in a seeded order, repeated when there are fewer."),
    seed: z.number().int().min(0).optional().describe("Orders the combinations (default 0)."),
    generator: z
      .strictObject({ scripted: ScriptedGenerator.optional(), hosted: HostedGenerator.optional() })
      .describe("The model that writes the candidates: exactly one of scripted and hosted."),
    validation: z
      .strictObject({
        harness: Name.optional().describe("The harness the reference solutions are replayed through (default reins-agent)."),
        attempts: PositiveInt.max(20).optional().describe("k: every task's reference must pass k times out of k (default 2)."),
        sandbox: SandboxSpecSchema.optional().describe("Where the replays run (default: local, 2 at once)."),
      })
      .optional()
      .describe("How candidates are checked in sandboxes."),
    gates: z
      .strictObject({
        mutations: z.boolean().optional().describe("Replay each reference with a written file left out and with a written value changed: the verifier must fail both (default true)."),
        nearDuplicate: z.number().gt(0).max(1).optional().describe("Drop a candidate whose instruction is this similar (normalized edit distance) to one kept before it (default 0.9)."),
        leaks: z.boolean().optional().describe("Drop a candidate whose instruction quotes an answer its verifier expects (a file's whole expected content, an expected value of 6+ characters) (default true)."),
      })
      .optional()
      .describe("Which gates beyond the always-on ones (schema, reference passes k/k, do-nothing fails) apply."),
    reverify: z
      .strictObject({ minPassRate: z.number().min(0).max(1).optional().describe("The share of kept tasks that must pass again in a second, fresh pass (default 0.9).") })
      .optional(),
  })
  .describe("A synthesis: candidates asked of a generator, kept only when they pass every gate, re-verified, written as TaskFamily YAML.");

export const SynthesisDocument = documentSchema("Synthesis", SynthesisSpecSchema, "A Synthesis: task families written by a model and kept only when they verify.");

export type SynthesisSpec = z.input<typeof SynthesisSpecSchema>;
