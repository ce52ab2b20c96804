/** What `reins synth` consumes: a Synthesis with its defaults filled and its files located. */

import type { ResolvedHostedApi, ResolvedModel } from "./plan.js";

/** The difficulty band: the baseline Model (resolved), its harness, tries per task, the kept pass-rate range. */
export interface ResolvedDifficultyGate {
  model: ResolvedModel;
  harness: string;
  attempts: number;
  min: number;
  max: number;
}

export interface ResolvedHostedGenerator extends ResolvedHostedApi {
  maxTokens: number;
  temperature: number;
}

export type ResolvedGenerator = { type: "scripted"; answers: string[] } | ({ type: "hosted" } & ResolvedHostedGenerator);

export interface ResolvedSynthesis {
  name: string;
  /** Absolute path of the spec file (candidates are checked in a directory beside nothing of it). */
  specFile: string;
  personas: string[];
  scenarios: string[];
  skills: string[];
  count: number;
  seed: number;
  /** Scripted answers are absolute paths inside the project. */
  generator: ResolvedGenerator;
  /** `sandbox` as written (default local, 2 at once): it goes into the Evaluations that check candidates. */
  validation: { harness: string; attempts: number; sandbox: Record<string, unknown> };
  gates: { mutations: boolean; nearDuplicate: number; leaks: boolean; difficulty?: ResolvedDifficultyGate };
  reverify: { minPassRate: number };
}
