/**
 * Shared by `eval` and `run`: which plan runs — the specs' (finished by the runtime), a reviewed
 * plan file (`reins plan --out plan.json`, run exactly as written), or, with `--resume DIR` alone,
 * the plan stored in the run directory — then its run directory; and Ctrl-C. Failures throw
 * (ReinsError, DiagnosticsError for specs that do not compile); usage errors exit 2.
 */
import { DiagnosticsError, ReinsError, type Plan } from "../compiler/index.js";
import { checkRunKind, isPlanFile, openRun, planSpecs, readPlanFile, readRunPlan, type RunKind, type RunStore } from "../runtime/index.js";
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
  /** `reins run --seeds 1,2,3`: the Experiment's seeds, in place of its spec's. */
  seeds?: string;
}

/**
 * The plan to run and its opened run directory. Returns undefined after a usage error (exit 2);
 * specs that do not compile throw DiagnosticsError, failures of effects a ReinsError.
 */
export function openRunFor(command: "run" | "eval", paths: string[], opts: RunCliOptions): { plan: Plan; store: RunStore } | undefined {
  const plan = planFor(command, paths, opts);
  if (!plan) return undefined;
  return { plan, store: openStoreFor(plan, opts, command === "eval" ? "evaluation" : "training") };
}

/**
 * The plan `reins run` or `reins eval` runs: compiled from specs (with --seeds, one per seed), a
 * reviewed plan file, or the one stored in the --resume directory. Undefined after a usage error.
 */
export function planFor(command: "run" | "eval", paths: string[], opts: RunCliOptions): Plan | undefined {
  const plan = compiledPlanFor(command, paths, opts);
  // A resumed directory holds the kind of run this command makes, or it is refused before anything runs.
  if (plan && opts.resume) checkRunKind(opts.resume, runKindOf(command, plan), plan.seeds);
  if (plan && command === "run" && plan.kind !== "Experiment") {
    throw new ReinsError(
      "NotAnExperiment",
      `${plan.name} is an Evaluation; reins run trains an Experiment.`,
      `Run it with: reins eval ${paths.join(" ") || `--resume ${opts.resume}`}`,
    );
  }
  return plan;
}

/** The kind of run directory `reins <command>` makes for `plan`. */
function runKindOf(command: "run" | "eval", plan: Plan): RunKind {
  return command === "eval" ? "evaluation" : plan.seeds ? "training-seeds" : "training";
}

/** The run directory of a plan with one seed: new (--out, or runs/<name>-<time>) or resumed, of `kind`. */
export function openStoreFor(plan: Plan, opts: RunCliOptions, kind: RunKind): RunStore {
  let store: RunStore;
  try {
    // A new run directory is made here, one level at a time, so an impossible --out fails plainly.
    if (!opts.resume && opts.out) makeDirectory(opts.out);
    store = openRun(plan, { ...(opts.out ? { out: opts.out } : {}), ...(opts.resume ? { resume: opts.resume } : {}), argv: process.argv.slice(2), kind });
  } catch (err) {
    throw opts.resume ? err : outputError(opts.out ?? "runs/", err);
  }
  return store;
}

function compiledPlanFor(command: "run" | "eval", paths: string[], opts: RunCliOptions): Plan | undefined {
  const usage = (message: string) => {
    say(`error: ${message}`);
    process.exitCode = EXIT.usage;
    return undefined;
  };
  const seeds = opts.seeds === undefined ? undefined : parseSeeds(opts.seeds);
  if (seeds && "error" in seeds) return usage(seeds.error);
  if (paths.length === 0) {
    if (!opts.resume)
      return usage(
        `give spec files, a plan file, or --resume DIR\n  usage: reins ${command} SPECS... | reins ${command} plan.json | reins ${command} --resume DIR`,
      );
    if (seeds)
      return usage(`--seeds plans the specs' seeds anew; ${opts.resume} runs the seeds it was started with (give the specs too to check they are the same)`);
    return readRunPlan(opts.resume);
  }
  const planFile = isPlanFile(paths);
  if (planFile && opts.target) return usage(`--target chooses among specs; the plan file ${paths[0]} has one target (${opts.target} was given)`);
  if (planFile && seeds)
    return usage(
      `--seeds plans the specs' seeds; the plan file ${paths[0]} runs as it was planned (plan the seeds into it: reins plan SPECS --seeds 1,2,3 --out FILE)`,
    );
  const planned = planFile
    ? readPlanFile(paths[0]!)
    : planSpecs(paths, { ...(opts.target ? { target: opts.target } : {}), ...(seeds ? { seeds: seeds.seeds } : {}), ...projectRootOf(opts) });
  if (!planned.value) throw new DiagnosticsError(planned.diagnostics);
  if (!opts.json) reportDiagnostics(planned.diagnostics, false);
  return planned.value;
}

/** As many seeds as an Experiment's `seeds` may list. */
const MAX_SEEDS = 64;

/** `--seeds 1,2,3`: distinct integers, at most 64; or what is wrong with the list. */
export function parseSeeds(text: string): { seeds: number[] } | { error: string } {
  const shape = `--seeds takes a comma-separated list of distinct integers (1 to ${MAX_SEEDS} of them), e.g. --seeds 1,2,3`;
  const parts = text.split(",").map((p) => p.trim());
  const bad = parts.find((p) => !/^-?[0-9]{1,15}$/.test(p));
  if (bad !== undefined) return { error: `${shape}; ${bad === "" ? "an empty entry" : JSON.stringify(bad)} in ${JSON.stringify(text)} is not an integer` };
  const seeds = parts.map(Number);
  if (seeds.length > MAX_SEEDS) return { error: `${shape}; ${seeds.length} were given` };
  const twice = seeds.find((s, i) => seeds.indexOf(s) < i);
  if (twice !== undefined) return { error: `${shape}; ${twice} is listed twice` };
  return { seeds };
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
