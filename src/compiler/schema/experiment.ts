/** Experiment and Evaluation: what to run, with what, how often. */
import { z } from "zod";
import { Name, NonNegativeInt, PositiveInt, Ref, documentSchema } from "./common.js";
import { AdamBetas, AlgorithmSpecSchema } from "./algorithm.js";
import { McpServersSchema } from "./mcp.js";
import { SandboxSpecSchema, TrainerSpecSchema } from "./sandbox.js";

export const TaskSelector = z
  .union([
    z.strictObject({ name: Name.describe("One task by name.") }),
    z.strictObject({ family: Name.describe("Every task of a family.") }),
    z.strictObject({ labels: z.record(z.string(), z.string()).describe("Every task with all these labels.") }),
    z.strictObject({ category: z.string().describe("Every task of a category.") }),
  ])
  .describe("Selects tasks by name, family, labels or category.");

const HarnessName = Name.describe("Name of a Harness document (or a harness shipped with reins).");
const HarnessEnv = z
  .record(z.string(), z.string())
  .optional()
  .describe("Environment added to the harness's own for this experiment (templates like the harness's env).");

/** Knobs: settings of a harness for this experiment, applied as its spec's `knobs` say (part of the plan hash). */
const HarnessKnobValues = {
  systemPrompt: z.string().min(1).optional().describe("Replaces the harness's system prompt (the harness's spec must declare knobs.systemPrompt)."),
  appendSystemPrompt: z.string().min(1).optional().describe("Added to the end of the harness's system prompt (knobs.appendSystemPrompt)."),
  tools: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe("The harness's built-in tools to offer, by the harness's own names (knobs.tools); the others are not offered."),
  maxTurns: PositiveInt.max(100_000).optional().describe("The harness stops after this many model calls (knobs.maxTurns)."),
};

export const HarnessUse = z.strictObject({
  name: HarnessName,
  weight: z
    .number()
    .positive()
    .optional()
    .describe(
      "This harness's share of the training rollouts (default 1): each training step runs each of its tasks through one harness, and harness h gets weight_h / Σ weight of the run's groups (dealt in order, never a whole group ahead of its share; shuffled within a step from the seed). Held-out evaluations run every task through every harness.",
    ),
  env: HarnessEnv,
  sftReferences: PositiveInt.max(1_000_000)
    .optional()
    .describe(
      "How many training tasks' reference solutions are replayed through this harness for SFT (default: every one; a seeded sample otherwise), for a harness slow to start.",
    ),
  heldOutAttempts: PositiveInt.max(10_000)
    .optional()
    .describe(
      "Attempts per held-out task through this harness (default eval.attempts): a harness that takes ten times longer to start can be evaluated on fewer.",
    ),
  ...HarnessKnobValues,
});

/** An Evaluation runs every task through every harness: no mix weight. */
export const EvaluationHarnessUse = z.strictObject({ name: HarnessName, env: HarnessEnv, ...HarnessKnobValues });

export const BadStepPolicy = z
  .strictObject({
    action: z
      .enum(["stop", "skip"])
      .optional()
      .describe(
        "stop (default): end the run with a plain, resumable error. skip: apply nothing for that step, keep the current weights serving, record a step-skipped event and go on.",
      ),
    maxSkips: NonNegativeInt.max(1_000_000)
      .optional()
      .describe("With skip: the run stops once more than this many consecutive steps (of SFT, or of RL) were skipped (default 3)."),
  })
  .optional()
  .describe(
    "What to do with a training step the trainer refuses as non-finite: a NaN or infinite loss (NonFiniteLoss), batch values (NonFiniteBatch) or gradient norm (NonFiniteGradient). A refused step changes no weights. Not part of the plan hash, so it can be changed when resuming.",
  );

export const MetricsSinks = z
  .strictObject({
    tensorboard: z
      .boolean()
      .optional()
      .describe(
        "true: each training step's metrics (metrics.jsonl) and each held-out evaluation also go to TensorBoard event files in <run directory>/tensorboard (tensorboard --logdir). Default false.",
      ),
    wandb: z
      .strictObject({
        project: z.string().min(1).max(128).describe("The W&B project the run belongs to (when the offline run is synced)."),
        mode: z
          .enum(["offline"])
          .optional()
          .describe("offline (the default and only mode): W&B run files in <run directory>/wandb, nothing is sent; upload them later with `wandb sync`."),
      })
      .optional()
      .describe("Also log each step's metrics to a W&B offline run named after the run directory."),
  })
  .optional()
  .describe(
    "Where the metrics go besides metrics.jsonl (always written, the source of truth): names follow the common RL conventions (reward/mean, kl, entropy, clip_frac, grad_norm, timing_s/*), broken down per task family and harness. Needs the metrics Python environment (scripts/install-metrics-python.sh). Not part of the plan hash.",
  );

const Imports = z
  .array(z.string().min(1))
  .optional()
  .describe("More spec files or directories to load, relative to this file, inside the project or reins's shipped specs/.");

export const ExperimentSpecSchema = z
  .strictObject({
    imports: Imports,
    model: Ref.describe("The policy Model."),
    tasks: z.array(TaskSelector).min(1),
    heldOut: z.array(TaskSelector).optional().describe("Held-out tasks for periodic evaluation."),
    harnesses: z.array(HarnessUse).min(1),
    algorithm: z.union([Ref, AlgorithmSpecSchema]),
    sandbox: z.union([Ref, SandboxSpecSchema]).optional(),
    trainer: z.union([Ref, TrainerSpecSchema]).optional(),
    sft: z
      .strictObject({
        steps: PositiveInt.max(100_000).describe("Optimizer steps over the reference trajectories."),
        learningRate: z.number().positive().optional(),
        batchSize: PositiveInt.optional().describe("Trajectories per step (default: all)."),
        when: z
          .enum(["if-untrained", "always"])
          .optional()
          .describe(
            "if-untrained (default): skip SFT when the policy's directory holds trained weights, i.e. weights the reins trainer saved after at least one optimizer step (its trained.json), such as a weights directory of an earlier run; a fresh policy is untrained. always: run SFT in any case.",
          ),
        targetLoss: z
          .number()
          .positive()
          .optional()
          .describe(
            "Stop SFT once its loss per trained token, averaged over the last 10 steps, falls below this; `steps` is then the most it runs. A tiny policy's SFT reaches a given fit after a number of steps that differs from seed to seed (the quickstart's copying of the word starts anywhere between ~100 and ~250 steps): stopping at a loss starts RL from the same fit on every seed. Default: none (exactly `steps`).",
          ),
        adamBetas: AdamBetas.optional().describe("Adam's (beta1, beta2) for SFT's optimizer steps (default [0.9, 0.999]; see the Algorithm's adamBetas)."),
        optimizerState: z
          .enum(["reset", "keep"])
          .optional()
          .describe(
            "The optimizer state the first RL step starts from after SFT. reset (default): fresh Adam moments, as when SFT and RL are separate runs; RL's steps then have the size algorithm.learningRate says. keep: SFT's moments carry over; Adam's second moment, built from SFT's larger gradients, then shrinks RL's steps by the ratio of the two phases' gradient sizes (a factor of ~10 in the quickstart, and different for every seed).",
          ),
      })
      .optional()
      .describe("Supervised warm-up on the tasks' reference solutions, replayed through the harnesses (environment tokens masked)."),
    steps: PositiveInt.max(1_000_000),
    tasksPerStep: PositiveInt.optional().describe(
      "Tasks sampled per step (default: all selected); each runs through one harness (see harnesses[].weight) in a group of algorithm.groupSize rollouts.",
    ),
    eval: z
      .strictObject({
        everySteps: NonNegativeInt.optional().describe("Evaluate held-out tasks every N steps (0 = only before and after)."),
        attempts: PositiveInt.optional(),
      })
      .optional(),
    onBadStep: BadStepPolicy,
    metrics: MetricsSinks,
    mcpServers: McpServersSchema,
    seed: z.number().int().optional().describe("The seed of the run: the task order, the harness mix, each rollout's seed and the initial policy (default 0)."),
    seeds: z
      .array(z.number().int())
      .min(1)
      .max(64)
      .optional()
      .describe(
        "Run the Experiment once per seed, one after another (instead of `seed`; distinct values): each seed is an ordinary run in <run directory>/seed-<s> whose plan has that seed, also as the onnx engine's sampling seed, and a policy reins creates gets its own initial weights per seed. summary.json reports each seed and the held-out gain's mean, sd and 95% interval over the seeds. `reins run --seeds 1,2,3` overrides it.",
      ),
  })
  .describe("A training experiment.");

export const EvaluationSpecSchema = z
  .strictObject({
    imports: Imports,
    model: Ref.optional().describe("Needed when a harness calls a model (it also grades rubrics that name no judge)."),
    tasks: z.array(TaskSelector).min(1),
    harnesses: z.array(EvaluationHarnessUse).min(1).describe("Every task runs through every harness."),
    attempts: PositiveInt.max(10_000).optional().describe("Attempts per task × harness (default 1)."),
    sandbox: z.union([Ref, SandboxSpecSchema]).optional(),
    mcpServers: McpServersSchema,
    seed: z.number().int().optional(),
  })
  .describe("An evaluation: tasks × harnesses × attempts, reported as pass@k and pass^k.");

export const ExperimentDocument = documentSchema("Experiment", ExperimentSpecSchema, "An Experiment: RL training through harnesses.");
export const EvaluationDocument = documentSchema("Evaluation", EvaluationSpecSchema, "An Evaluation.");

export type ExperimentSpec = z.input<typeof ExperimentSpecSchema>;
export type EvaluationSpec = z.input<typeof EvaluationSpecSchema>;
export type TaskSelectorSpec = z.input<typeof TaskSelector>;

/** A validated Experiment's or Evaluation's spec, as planning reads it (the zod output: defaults applied). */
export type ExperimentSpecValue = z.output<typeof ExperimentSpecSchema>;
export type EvaluationSpecValue = z.output<typeof EvaluationSpecSchema>;
/** One `harnesses[]` entry of either (an Evaluation's has no weight, sftReferences or heldOutAttempts). */
export type HarnessUseValue = z.output<typeof HarnessUse>;
