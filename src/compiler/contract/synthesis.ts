/** What `reins synth` consumes: a Synthesis with its defaults filled and its files located. */

import type { HostedApi } from "./vocabulary.js";

export interface ResolvedHostedGenerator {
  api: HostedApi;
  model: string;
  baseUrl: string;
  /** The environment variable holding the key (its value is read only when asking). */
  apiKeyEnv: string;
  maxTokens: number;
  temperature: number;
  timeoutSeconds: number;
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
  gates: { mutations: boolean; nearDuplicate: number; leaks: boolean };
  reverify: { minPassRate: number };
}
