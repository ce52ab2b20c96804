/** Shared by `eval` and `run`: compile, open the run store, create the sandbox provider, handle Ctrl-C. */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { execFileSync } from "node:child_process";
import { compilePlan, type Plan } from "../compiler/index.js";
import { DiagnosticsError } from "../compiler/contract/diagnostics.js";
import { ReinsError } from "../compiler/contract/problem.js";
import { RunStore } from "../runtime/store/run-store.js";
import { EXIT } from "./exit-codes.js";
import { outputError } from "./failure.js";
import { makeDirectory, reportDiagnostics, say } from "./io.js";
import { attachManifests } from "./manifests.js";
import { readPlanFile } from "./plan-file.js";

export interface RunCliOptions {
  out?: string;
  resume?: string;
  target?: string;
  json?: boolean;
  quiet?: boolean;
  concurrency?: string;
}

/**
 * Compile and open (or resume) the run directory. Throws a ReinsError when the specs do not
 * compile (DiagnosticsError), the run directory cannot be resumed (RunNotFound, RunCorrupt,
 * PlanChanged) or created (RunExists, OutputUnwritable).
 */
export function openRun(paths: string[], opts: RunCliOptions): { plan: Plan; store: RunStore } {
  if (paths.length === 0 && opts.resume) {
    const dir = resolve(opts.resume);
    const plan = readRunPlan(dir, opts.resume);
    return { plan, store: openStore(dir, plan, { resume: true }) };
  }
  const compiled = compilePlan(paths, opts.target ? { target: opts.target } : {});
  if (!compiled.value) throw new DiagnosticsError(compiled.diagnostics);
  if (!opts.json) reportDiagnostics(compiled.diagnostics, false);
  const plan = attachManifests(compiled.value);
  const dir = resolve(opts.resume ?? opts.out ?? `runs/${plan.name}-${new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19)}`);
  return { plan, store: openStore(dir, plan, { resume: opts.resume !== undefined, manifest: manifest() }) };
}

/** The plan of an existing run directory (`shown` is the directory as the user wrote it). */
function readRunPlan(dir: string, shown: string): Plan {
  const file = join(dir, "plan.json");
  if (!existsSync(file)) {
    const what = existsSync(dir) ? `${shown} holds no run (no plan.json)` : `${shown} does not exist`;
    throw new ReinsError("RunNotFound", `${what}.`);
  }
  const read = readPlanFile(file);
  if (!read.ok) throw new ReinsError("RunCorrupt", read.problem.message, "Restore the run directory's plan.json, or start a new run with --out.");
  return read.value;
}

function openStore(dir: string, plan: Plan, opts: { resume: boolean; manifest?: Record<string, unknown> }): RunStore {
  let opened: ReturnType<typeof RunStore.open>;
  try {
    if (!opts.resume) makeDirectory(dir);
    opened = RunStore.open(dir, plan, opts);
  } catch (err) {
    throw opts.resume ? err : outputError(dir, err);
  }
  if (!opened.store) throw ReinsError.of(opened.problem!);
  return opened.store;
}

function manifest(): Record<string, unknown> {
  let commit: string | null = null;
  let dirty: boolean | null = null;
  try {
    commit = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    dirty = execFileSync("git", ["status", "--porcelain"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() !== "";
  } catch {
    /* not a git checkout */
  }
  return { reins: "0.1.0", node: process.version, platform: `${process.platform}-${process.arch}`, git: { commit, dirty }, argv: process.argv.slice(2) };
}

/** Ctrl-C aborts the run cleanly (sandboxes destroyed, store consistent), then exits 130. */
export function interruptible(): AbortController {
  const ac = new AbortController();
  process.removeAllListeners("SIGINT");
  process.removeAllListeners("SIGTERM");
  const stop = () => {
    if (ac.signal.aborted) process.exit(EXIT.interrupted);
    say("interrupted: stopping rollouts (Ctrl-C again to quit now)…");
    ac.abort();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  return ac;
}
