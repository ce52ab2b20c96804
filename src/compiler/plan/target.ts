/**
 * What a plan is built for: an Experiment or Evaluation document with its validated spec typed by
 * its kind (the zod schemas' output, so no untyped value passes from validation to planning), and
 * the shape of the parts it names once resolved (parts.ts).
 */
import type { SourcePosition } from "../contract/problem.js";
import type { ResolvedAlgorithm, ResolvedHarness, ResolvedMcpServer, ResolvedModel, ResolvedSandbox, ResolvedTrainer } from "../contract/plan.js";
import type { HarnessUseValue } from "../schema/experiment.js";
import type { DocumentOf } from "../schema/kinds.js";
import type { TypedDocument } from "../schema/validate.js";

/** An Experiment or Evaluation document with its spec typed by its kind. */
export type PlanTarget =
  | { kind: "Experiment"; name: string; doc: TypedDocument<"Experiment">; spec: DocumentOf<"Experiment">["spec"] }
  | { kind: "Evaluation"; name: string; doc: TypedDocument<"Evaluation">; spec: DocumentOf<"Evaluation">["spec"] };

export type At = (...p: (string | number)[]) => SourcePosition;

/** The validated document as a plan target; undefined for another kind. */
export function targetOf(doc: TypedDocument): PlanTarget | undefined {
  if (doc.kind === "Experiment") return { kind: "Experiment", name: doc.name, doc, spec: doc.doc.spec };
  if (doc.kind === "Evaluation") return { kind: "Evaluation", name: doc.name, doc, spec: doc.doc.spec };
  return undefined;
}

/** One `harnesses[]` entry and the Harness it names (absent when it names none: UnknownReference). */
export interface HarnessUseEntry {
  use: HarnessUseValue;
  harness: ResolvedHarness | undefined;
}

export interface TargetParts {
  /** Where a path under the target's `spec` is in its file. */
  at: At;
  /** Every selected task; `training` less the held-out ones (an Evaluation's: all of them). */
  selected: string[];
  training: string[];
  heldOut: string[];
  harnesses: HarnessUseEntry[];
  model: ResolvedModel | undefined;
  mcpServers: ResolvedMcpServer[];
  sandbox: ResolvedSandbox;
  algorithm: ResolvedAlgorithm | undefined;
  trainer: ResolvedTrainer | undefined;
  /** An Experiment's seeds when it has several (`seeds`, or the caller's), else undefined. */
  seeds: readonly number[] | undefined;
}
