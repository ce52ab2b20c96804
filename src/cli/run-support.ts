/**
 * Shared by `eval` and `run`: which plan runs — the specs' (finished by the runtime), a reviewed
 * plan file (`reins plan --out plan.json`, run exactly as written), or, with `--resume DIR` alone,
 * the plan stored in the run directory — then its run directory; and Ctrl-C. Failures throw
 * (ReinsError, DiagnosticsError for specs that do not compile); usage errors exit 2.
 */
import { DiagnosticsError, ReinsError, type Plan } from "../compiler/index.js";
import { isPlanFile, openRun, planSpecs, readPlanFile, readRunPlan, type RunStore } from "../runtime/index.js";
import { EXIT } from "./exit-codes.js";
import { outputError } from "./failure.js";
import { makeDirectory, projectRootOf, reportDiagnostics, say } from "./io.js";

export interface RunCliOptions {
  out?: string;
  resume?: string;
  target?: string;
  json?: boolean;
  quiet?: boolean;
  concurrency?: string;
  projectRoot?: string;
}

/**
 * The plan to run and its opened run directory. Returns undefined after a usage error (exit 2);
 * specs that do not compile throw DiagnosticsError, failures of effects a ReinsError.
 */
export function openRunFor(command: "run" | "eval", paths: string[], opts: RunCliOptions): { plan: Plan; store: RunStore } | undefined {
  const plan = planFor(command, paths, opts);
  if (!plan) return undefined;
  if (command === "run" && plan.kind !== "Experiment") {
    throw new ReinsError("NotAnExperiment", `${plan.name} is an Evaluation; reins run trains an Experiment.`, `Run it with: reins eval ${paths.join(" ") || `--resume ${opts.resume}`}`);
  }
  let store: RunStore;
  try {
    // A new run directory is made here, one level at a time, so an impossible --out fails plainly.
    if (!opts.resume && opts.out) makeDirectory(opts.out);
    store = openRun(plan, { ...(opts.out ? { out: opts.out } : {}), ...(opts.resume ? { resume: opts.resume } : {}), argv: process.argv.slice(2) });
  } catch (err) {
    throw opts.resume ? err : outputError(opts.out ?? "runs/", err);
  }
  return { plan, store };
}

function planFor(command: "run" | "eval", paths: string[], opts: RunCliOptions): Plan | undefined {
  if (paths.length === 0) {
    if (!opts.resume) {
      say(`error: give spec files, a plan file, or --resume DIR\n  usage: reins ${command} SPECS... | reins ${command} plan.json | reins ${command} --resume DIR`);
      process.exitCode = EXIT.usage;
      return undefined;
    }
    return readRunPlan(opts.resume);
  }
  const planFile = isPlanFile(paths);
  if (planFile && opts.target) {
    say(`error: --target chooses among specs; the plan file ${paths[0]} has one target (${opts.target} was given)`);
    process.exitCode = EXIT.usage;
    return undefined;
  }
  const planned = planFile ? readPlanFile(paths[0]!) : planSpecs(paths, { ...(opts.target ? { target: opts.target } : {}), ...projectRootOf(opts) });
  if (!planned.value) throw new DiagnosticsError(planned.diagnostics);
  if (!opts.json) reportDiagnostics(planned.diagnostics, false);
  return planned.value;
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
