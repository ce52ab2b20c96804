/**
 * Run directories for `reins run` and `reins eval`: a new one for a plan, or an existing one to
 * resume, which runs only the plan it was started with (same hash), whose stored plan must still be
 * the one written there, and only as the kind of run that made it (RunKind, recorded in
 * manifest.json): an evaluation is not resumed as training, nor a training run as an evaluation,
 * nor a multi-seed run as one seed.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { CODES, ReinsError, type Plan } from "../../compiler/index.js";
import { RunStore } from "../store/run-store.js";
import { readPlanFile } from "./plan.js";

export interface OpenRunOptions {
  /** New run directory (default runs/<plan name>-<time>). */
  out?: string;
  /** Existing run directory to continue. */
  resume?: string;
  /** The command line, recorded in manifest.json. */
  argv?: readonly string[];
  /** What runs in it: recorded in a new directory's manifest.json, checked against a resumed one's. */
  kind?: RunKind;
}

/**
 * What made a run directory: `reins eval` (evaluation), `reins run` of one seed (training: also each
 * seed-<s> directory of a multi-seed run), `reins run` of several seeds (training-seeds: the
 * directory that holds their seed-<s> directories).
 */
export type RunKind = "evaluation" | "training" | "training-seeds";

const RUN_KINDS: readonly RunKind[] = ["evaluation", "training", "training-seeds"];

/** Open the run directory for `plan`: a new one, or `resume` when its stored plan has the same hash. */
export function openRun(plan: Plan, opts: OpenRunOptions = {}): RunStore {
  const dir = resolve(opts.resume ?? opts.out ?? `runs/${plan.name}-${new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19)}`);
  // Checked before the store opens it: a refused resume changes nothing in the directory.
  if (opts.resume !== undefined && opts.kind) checkRunKind(dir, opts.kind, plan.seeds);
  const manifest = { ...(opts.kind ? { runKind: opts.kind } : {}), ...buildRunManifest(opts.argv ?? []) };
  const opened = RunStore.open(dir, plan, { resume: opts.resume !== undefined, manifest });
  const problem = opened.problem;
  if (!opened.store || problem) {
    if (problem?.code === "PlanChanged")
      throw new ReinsError(
        "PlanChanged",
        `${dir} ran another plan: ${problem.message.replace(/^The specs changed/, "the specs or plan file changed")}`,
        CODES.PlanChanged,
      );
    throw new ReinsError(problem!.code, problem!.message, problem!.hint);
  }
  return opened.store;
}

/** The plan stored in a run directory (what `--resume DIR` alone runs), checked to be unchanged. */
export function readRunPlan(dir: string): Plan {
  const file = join(dir, "plan.json");
  if (!existsSync(file))
    throw new ReinsError(
      "RunNotFound",
      `${dir} ${existsSync(dir) ? "holds no run (no plan.json)" : "does not exist"}.`,
      "Pass the --out directory of the run to resume.",
    );
  const read = readPlanFile(file);
  if (!read.value) {
    const d = read.diagnostics[0]!;
    const position = { position: { file: d.file, line: d.line, column: d.column } };
    if (d.code === "PlanEdited")
      throw new ReinsError("PlanEdited", d.message, "The run directory's plan.json must stay as the run wrote it; start a new run with --out.", position);
    throw new ReinsError("RunCorrupt", d.message, "Restore the run directory's plan.json, or start a new run with --out.", position);
  }
  return read.value;
}

/**
 * The kind of run `dir` holds: manifest.json's `runKind`; for a directory written before reins
 * recorded it, the command of its manifest's command line (`run`, `eval`), or, without a
 * manifest.json, a plan.json with seeds (a multi-seed run's directory had none). Undefined when
 * nothing says (a directory made through the API).
 */
export function readRunKind(dir: string): RunKind | undefined {
  const manifestFile = join(dir, "manifest.json");
  if (!existsSync(manifestFile)) return planSeeds(dir) ? "training-seeds" : undefined;
  const manifest = readJsonObject(manifestFile);
  if (RUN_KINDS.includes(manifest?.runKind as RunKind)) return manifest!.runKind as RunKind;
  const argv = Array.isArray(manifest?.argv) ? (manifest.argv as unknown[]) : [];
  const command = argv.find((a) => typeof a === "string" && !a.startsWith("-"));
  return command === "eval" ? "evaluation" : command === "run" ? "training" : undefined;
}

/** The seeds of `dir`'s plan.json; undefined when it has none (or cannot be read). */
function planSeeds(dir: string): number[] | undefined {
  const plan = readJsonObject(join(dir, "plan.json"));
  return Array.isArray(plan?.seeds) && plan.seeds.length > 0 && plan.seeds.every((s) => Number.isInteger(s)) ? (plan.seeds as number[]) : undefined;
}

/**
 * Refuse to resume `dir` as a run of kind `expected` (the plan to run has `seeds`) when it holds
 * another kind: RunKindMismatch, naming the kind it holds and the command that resumes it.
 */
export function checkRunKind(dir: string, expected: RunKind, seeds?: readonly number[]): void {
  const kind = readRunKind(dir);
  if (!kind || kind === expected) return;
  const found = { kind, seeds: kind === "training-seeds" ? planSeeds(dir) : undefined };
  const list = (s: readonly number[] | undefined) => (s && s.length > 0 ? s.join(", ") : "");
  const holds =
    found.kind === "evaluation"
      ? "an evaluation (made by reins eval)"
      : found.kind === "training"
        ? expected === "training-seeds"
          ? "a one-seed training run (made by reins run)"
          : "a training run (made by reins run)"
        : `a multi-seed training run (seeds ${list(found.seeds) || "?"}; made by reins run)`;
  const resumeIt = `Resume it with: reins ${found.kind === "evaluation" ? "eval" : "run"} --resume ${dir}`;
  let message: string;
  let hint: string;
  if (expected === "evaluation") {
    message = `${dir} holds ${holds}; reins eval resumes only an evaluation.`;
    hint = `${resumeIt}. To evaluate its plan, start a new run: reins eval SPECS --out NEW_DIR.`;
  } else if (found.kind === "evaluation") {
    message = `${dir} holds ${holds}; reins run resumes only a training run.`;
    hint = `${resumeIt}. To train, start a new run: reins run SPECS --out NEW_DIR.`;
  } else if (expected === "training") {
    message = `${dir} holds ${holds}; the plan given has one seed.`;
    hint = `${resumeIt} (alone, or with its specs and the same seeds).`;
  } else {
    message = `${dir} holds ${holds}; the plan given has seeds ${list(seeds)}.`;
    hint = `${resumeIt} (alone, or with its specs and no --seeds). To run several seeds, start a new run with --out.`;
  }
  throw new ReinsError("RunKindMismatch", message, hint);
}

/** A JSON object read from `file`; undefined when it is missing, unreadable or not an object. */
function readJsonObject(file: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(readFileSync(file, "utf8")) as unknown;
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What manifest.json records about the software that ran: versions, git commit, command line. */
export function buildRunManifest(argv: readonly string[]): Record<string, unknown> {
  let commit: string | null = null;
  let dirty: boolean | null = null;
  try {
    commit = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    dirty = execFileSync("git", ["status", "--porcelain"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() !== "";
  } catch {
    /* not a git checkout */
  }
  return { reins: readReinsVersion(), node: process.version, platform: `${process.platform}-${process.arch}`, git: { commit, dirty }, argv: [...argv] };
}

/** The version in reins's own package.json. */
export function readReinsVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}
