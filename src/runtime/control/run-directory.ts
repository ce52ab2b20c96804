/**
 * Run directories for `reins run` and `reins eval`: a new one for a plan, or an existing one to
 * resume, which runs only the plan it was started with (same hash), and whose stored plan must
 * still be the one written there.
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
}

/** Open the run directory for `plan`: a new one, or `resume` when its stored plan has the same hash. */
export function openRun(plan: Plan, opts: OpenRunOptions = {}): RunStore {
  const dir = resolve(opts.resume ?? opts.out ?? `runs/${plan.name}-${new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19)}`);
  const opened = RunStore.open(dir, plan, { resume: opts.resume !== undefined, manifest: buildRunManifest(opts.argv ?? []) });
  const problem = opened.problem;
  if (!opened.store || problem) {
    if (problem?.code === "PlanChanged") throw new ReinsError("PlanChanged", `${dir} ran another plan: ${problem.message.replace(/^The specs changed/, "the specs or plan file changed")}`, CODES.PlanChanged);
    throw new ReinsError(problem!.code, problem!.message, problem!.hint);
  }
  return opened.store;
}

/** The plan stored in a run directory (what `--resume DIR` alone runs), checked to be unchanged. */
export function readRunPlan(dir: string): Plan {
  const file = join(dir, "plan.json");
  if (!existsSync(file)) throw new ReinsError("RunNotFound", `${dir} ${existsSync(dir) ? "holds no run (no plan.json)" : "does not exist"}.`, "Pass the --out directory of the run to resume.");
  const read = readPlanFile(file);
  if (!read.value) {
    const d = read.diagnostics[0]!;
    const position = { position: { file: d.file, line: d.line, column: d.column } };
    if (d.code === "PlanEdited") throw new ReinsError("PlanEdited", d.message, "The run directory's plan.json must stay as the run wrote it; start a new run with --out.", position);
    throw new ReinsError("RunCorrupt", d.message, "Restore the run directory's plan.json, or start a new run with --out.", position);
  }
  return read.value;
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
