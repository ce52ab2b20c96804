/** Synthesis: task families written by a generator model, kept only when they pass the gates. */
import { z } from "zod";
import { documentSchema, Name, PositiveInt } from "./common.js";
import { SandboxSpecSchema } from "./sandbox.js";
import { HostedApiFields } from "./hosted.js";

const Phrases = (what: string) => z.array(z.string().min(1).max(2000)).min(1).max(1000).describe(what);

const ScriptedGenerator = z
  .strictObject({
    answers: z
      .array(z.string().min(1))
      .min(1)
      .max(10_000)
      .describe(
        "Files (relative to this spec, inside the project) holding the generator's answers, one per candidate, in order: text with one TaskFamily in a ```yaml block (or the YAML alone).",
      ),
  })
  .describe("A generator that answers from files: for tests, examples and replaying a hosted model's answers.");

const HostedGenerator = z
  .strictObject({
    ...HostedApiFields,
    maxTokens: PositiveInt.max(200_000).optional().describe("The most tokens one answer may take (default 8192)."),
    temperature: z.number().min(0).max(2).optional().describe("Sampling temperature (default 1)."),
  })
  .describe("A model behind a hosted API, asked once per candidate.");

export const SynthesisSpecSchema = z
  .strictObject({
    personas: Phrases('Who the tasks are for ("a support lead at a SaaS company"); each candidate is asked for one persona × scenario × skill.'),
    scenarios: Phrases('What they are doing ("answering customer tickets from a product FAQ").'),
    skills: Phrases('The operation a task exercises ("extract facts from Markdown into JSON").'),
    count: PositiveInt.max(10_000).describe(
      "How many candidates to ask for: the persona × scenario × skill combinations in a seeded order, repeated when there are fewer.",
    ),
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
        mutations: z
          .boolean()
          .optional()
          .describe("Replay each reference with a written file left out and with a written value changed: the verifier must fail both (default true)."),
        nearDuplicate: z
          .number()
          .gt(0)
          .max(1)
          .optional()
          .describe("Drop a candidate whose instruction is this similar (normalized edit distance) to one kept before it (default 0.9)."),
        leaks: z
          .boolean()
          .optional()
          .describe(
            "Drop a candidate whose instruction quotes an answer its verifier expects (a file's whole expected content, an expected value of 6+ characters) (default true).",
          ),
        difficulty: z
          .strictObject({
            model: Name.describe("The baseline: a Model document (in these specs) that tries every task, e.g. a hosted model or the current policy."),
            harness: Name.optional().describe("The harness it works through (default: validation.harness)."),
            attempts: PositiveInt.max(64).optional().describe("Tries per task (default 4)."),
            min: z.number().min(0).max(1).optional().describe("The lowest pass rate kept (default 0.1): easier tasks teach nothing."),
            max: z.number().min(0).max(1).optional().describe("The highest pass rate kept (default 0.9)."),
          })
          .optional()
          .describe(
            "Keep a candidate only when the baseline model passes its tasks at a rate within [min, max], over all its tasks' tries (run after the other gates).",
          ),
      })
      .optional()
      .describe("Which gates beyond the always-on ones (schema, reference passes k/k, do-nothing fails) apply."),
    reverify: z
      .strictObject({
        minPassRate: z.number().min(0).max(1).optional().describe("The share of kept tasks that must pass again in a second, fresh pass (default 0.9)."),
      })
      .optional(),
  })
  .describe("A synthesis: candidates asked of a generator, kept only when they pass every gate, re-verified, written as TaskFamily YAML.");

export const SynthesisDocument = documentSchema(
  "Synthesis",
  SynthesisSpecSchema,
  "A Synthesis: task families written by a model and kept only when they verify.",
);

export type SynthesisSpec = z.input<typeof SynthesisSpecSchema>;
