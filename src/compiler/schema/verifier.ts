/** The verifier spec: declarative checks, a script, a rubric, how their scores combine; the Verifier document. */
import { z } from "zod";
import { documentSchema } from "./common.js";
import { CheckSpecSchema } from "./checks.js";

export const ScriptSpecSchema = z
  .strictObject({
    command: z
      .union([z.string(), z.array(z.string()).min(1)])
      .describe(
        'argv, or a string run with `sh -c`. Runs in the workspace after the harness exits; $REINS_HIDDEN is the directory of the task\'s hidden files. Prints `{"reward": x, "subscores": {...}}` on stdout and exits 0.',
      ),
    timeoutSeconds: z
      .number()
      .int()
      .positive()
      .max(3600)
      .optional()
      .describe("Default 120. A script that runs longer is killed (whole process tree) and reported as a verifier error."),
  })
  .describe("A scoring command run in the sandbox.");

export const RubricItemSpecSchema = z.union([
  z.string().min(1).describe("A criterion (id: item-<n>, weight 1)."),
  z.strictObject({
    id: z
      .string()
      .regex(/^[A-Za-z0-9_.-]+$/)
      .optional()
      .describe("Stable id the judge answers with (default item-<n>)."),
    criterion: z.string().min(1).describe("What the judge checks, in one or two sentences."),
    weight: z.number().nonnegative().optional().describe("Default 1."),
  }),
]);

export const RubricSpecSchema = z
  .strictObject({
    judge: z
      .string()
      .optional()
      .describe(
        "Name of the Model document that grades this rubric, through its own engine (default: the policy, the Experiment's or Evaluation's model). The plan states the judge of every rubric.",
      ),
    items: z.array(RubricItemSpecSchema).min(1).describe("Criteria scored in [0, 1] by the judge."),
    files: z.array(z.string().min(1)).optional().describe("Workspace globs shown to the judge (bounded in size)."),
  })
  .describe("Items judged by a model from the instruction and the workspace files.");

const PartWeight = z.number().nonnegative();
export const CombineSpecSchema = z
  .strictObject({
    mode: z
      .enum(["weighted", "all", "min", "any"])
      .describe(
        "weighted: weighted mean of part scores; all: 1 if every part reaches passThreshold else 0; min: lowest part score; any: 1 if some part reaches passThreshold else 0.",
      ),
    weights: z
      .strictObject({
        checks: PartWeight.optional(),
        script: PartWeight.optional(),
        rubric: PartWeight.optional(),
        code: PartWeight.optional().describe("checks and script together (their mean)."),
      })
      .optional()
      .describe("Weights for `weighted` (default: equal), e.g. {code: 0.7, rubric: 0.3}."),
  })
  .describe("How the parts' scores make the reward.");

export const VerifierSpecSchema = z
  .strictObject({
    checks: z.array(CheckSpecSchema).optional().describe("Declarative checks on the final workspace; the part's score is their weighted mean."),
    script: ScriptSpecSchema.optional(),
    rubric: RubricSpecSchema.optional(),
    combine: CombineSpecSchema.optional().describe("Default: weighted with equal weights."),
    passThreshold: z.number().min(0).max(1).optional().describe("Reward at or above which an attempt counts as passed (default 1)."),
  })
  .describe("How a final workspace is scored: checks, a script and/or a rubric, combined.");

export const VerifierDocument = documentSchema("Verifier", VerifierSpecSchema, "A Verifier: scores the final workspace.");

export type VerifierSpec = z.input<typeof VerifierSpecSchema>;
