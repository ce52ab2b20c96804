/** The registry of kinds: apiVersion+kind → zod schema, and the file name of its JSON Schema. */
import type { z } from "zod";
import { TaskDocument } from "./task.js";
import { TaskFamilyDocument } from "./task-family.js";
import { HarnessDocument } from "./harness.js";
import { ModelDocument } from "./model.js";
import { AlgorithmDocument } from "./algorithm.js";
import { SandboxDocument, TrainerDocument } from "./sandbox.js";
import { ExperimentDocument, EvaluationDocument } from "./experiment.js";
import { VerifierDocument } from "./verifier.js";
import { SynthesisDocument } from "./synthesis.js";

export const KINDS = {
  Task: { schema: TaskDocument, file: "task" },
  TaskFamily: { schema: TaskFamilyDocument, file: "task-family" },
  Harness: { schema: HarnessDocument, file: "harness" },
  Verifier: { schema: VerifierDocument, file: "verifier" },
  Model: { schema: ModelDocument, file: "model" },
  Algorithm: { schema: AlgorithmDocument, file: "algorithm" },
  Sandbox: { schema: SandboxDocument, file: "sandbox" },
  Trainer: { schema: TrainerDocument, file: "trainer" },
  Experiment: { schema: ExperimentDocument, file: "experiment" },
  Evaluation: { schema: EvaluationDocument, file: "evaluation" },
  Synthesis: { schema: SynthesisDocument, file: "synthesis" },
} as const satisfies Record<string, { schema: z.ZodType; file: string }>;

export type Kind = keyof typeof KINDS;
export const KIND_NAMES = Object.keys(KINDS) as Kind[];

export function isKind(k: unknown): k is Kind {
  return typeof k === "string" && Object.hasOwn(KINDS, k);
}

export type DocumentOf<K extends Kind> = z.output<(typeof KINDS)[K]["schema"]>;
