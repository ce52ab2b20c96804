import type { Command } from "commander";
import { isReinsError, ReinsError, type Plan } from "../../compiler/index.js";
import { createProvider, openSeedsDirectory, runExperiment, runSeeds, runSummary } from "../../runtime/index.js";
import { EXIT } from "../exit-codes.js";
import { makeDirectory, printJson, PROJECT_ROOT_OPTION, say } from "../io.js";
import { outputError } from "../failure.js";
import { Progress } from "../progress.js";
import { renderFidelityTable } from "../render/fidelity.js";
import { renderSeeds } from "../render/seeds.js";
import { interruptible, openStoreFor, planFor, type RunCliOptions } from "../run-support.js";
import { viewCommand } from "../view-command.js";

export function register(program: Command): void {
  program
    .command("run")
    .description("Train an Experiment: sample through the harnesses, verify, build trees, train, publish weights; evaluate held-out tasks.")
    .argument("[paths...]", "spec files or directories, or one plan file written by `reins plan --out`")
    .option("--out <dir>", "run directory (default runs/<name>-<time>)")
    .option("--resume <dir>", "continue a killed run from its last checkpoint (a multi-seed run: its unfinished seeds)")
    .option(
      "--seeds <list>",
      "run once per seed, one after another, and report the spread over the seeds, e.g. --seeds 1,2,3 (in place of the spec's seed/seeds)",
    )
    .option("--target <name>", "the Experiment to run when several are given")
    .option("--concurrency <n>", "rollouts at once (default: the sandbox's concurrency)")
    .option("--threads <n>", "CPU threads for the trainer (the onnx engine has the Model's engine.threads)", "2")
    .option("--json", "print the outcome as JSON on stdout")
    .option("--quiet", "no progress on stderr")
    .option(...PROJECT_ROOT_OPTION)
    .action(async (paths: string[], opts: RunCliOptions & { threads: string }) => {
      const plan = planFor("run", paths, opts);
      if (!plan) return;
      if (plan.seeds) return runSeedsCommand(plan, opts);
      const store = openStoreFor(plan, opts, "training");
      const ac = interruptible();
      const quiet = Boolean(opts.quiet); // --json keeps stdout for data; the talk stays on stderr
      const started = Date.now();
      const progress = new Progress({ enabled: !quiet, since: started });
      progress.say(`run directory ${store.dir}; watch it: ${viewCommand(store.dir)}`);
      const provider = await createProvider(plan.sandbox, { hidePaths: [store.dir] });
      try {
        const outcome = await runExperiment({ plan, store, provider, ...loopOptions(opts, progress, ac.signal) });
        const summary = runSummary(outcome, plan, started);
        store.writeJson("summary.json", summary);
        progress.finish();
        if (outcome.interrupted) {
          say(`interrupted; resume with: reins run --resume ${store.dir}`);
          process.exitCode = EXIT.interrupted;
          return;
        }
        if (opts.json) printJson(summary);
        else {
          const pct = (v: number | null) => (v === null ? "—" : `${(v * 100).toFixed(1)}%`);
          process.stdout.write(
            [
              `${plan.name}: ${outcome.steps} training steps in ${summary.seconds} s`,
              `held-out pass rate: before RL ${pct(outcome.heldOut.before)}, after RL ${pct(outcome.heldOut.after)}`,
              ...Object.entries(outcome.heldOut.byHarness).map(
                ([h, c]) =>
                  `  ${h}: ${pct(c.before)} → ${pct(c.after)} (${c.n} rollouts each${c.gainStdErrors === null ? "" : `, ${c.gainStdErrors >= 0 ? "+" : ""}${c.gainStdErrors.toFixed(1)} standard errors`})`,
              ),
              ...(outcome.skippedSteps.length > 0
                ? [`skipped steps (non-finite, nothing applied): ${outcome.skippedSteps.length}, plan steps ${outcome.skippedSteps.join(", ")}`]
                : []),
              "",
              renderFidelityTable(outcome.fidelity),
              ...(outcome.engine
                ? [`engine: ${outcome.engine.server} ${outcome.engine.version ?? "(version unknown)"}, ${outcome.engine.logprobsMode} logprobs`]
                : []),
              `reward curve: ${outcome.rewardCurve}`,
              `run directory: ${outcome.runDir}`,
              "",
            ].join("\n"),
          );
        }
        process.exitCode = EXIT.ok;
      } catch (err) {
        // The run stops; it is resumable from its last checkpoint.
        store.event({ type: "run-stopped", code: isReinsError(err) ? err.code : "InternalError", message: (err as Error)?.message ?? String(err) });
        if (isReinsError(err))
          throw new ReinsError(err.code, err.message, `${err.hint.replace(/\.$/, "")} (resume with --resume ${store.dir})`, { cause: err });
        throw err;
      } finally {
        progress.finish();
        progress.say(`see the run: ${viewCommand(store.dir)}`);
        await provider.close();
        store.close();
      }
    });
}

/** `reins run` of a multi-seed plan: each seed's run in <dir>/seed-<s>, then the spread over the seeds. */
async function runSeedsCommand(plan: Plan, opts: RunCliOptions & { threads: string }): Promise<void> {
  let dir: string;
  try {
    if (!opts.resume && opts.out) makeDirectory(opts.out);
    dir = openSeedsDirectory(plan, { ...(opts.out ? { out: opts.out } : {}), ...(opts.resume ? { resume: opts.resume } : {}), argv: process.argv.slice(2) });
  } catch (err) {
    throw opts.resume ? err : outputError(opts.out ?? "runs/", err);
  }
  const ac = interruptible();
  const progress = new Progress({ enabled: !opts.quiet, since: Date.now() });
  progress.say(`multi-seed run directory ${dir} (seeds ${plan.seeds!.join(", ")}, one after another); watch it: ${viewCommand(dir)}`);
  const provider = await createProvider(plan.sandbox, { hidePaths: [dir] });
  try {
    const outcome = await runSeeds({
      plan,
      dir,
      provider,
      ...loopOptions(opts, progress, ac.signal),
      argv: process.argv.slice(2),
      onSeed: (e) => {
        progress.finish();
        progress.say(
          `seed ${e.seed} (${e.index + 1} of ${e.of}): ${e.action === "done" ? "finished before; skipped" : e.action === "resume" ? "resuming" : "running"} in ${e.dir}`,
        );
      },
    });
    progress.finish();
    if (outcome.interrupted || !outcome.summary) {
      say(`interrupted; resume with: reins run --resume ${dir}`);
      process.exitCode = EXIT.interrupted;
      return;
    }
    if (opts.json) printJson(outcome.summary);
    else process.stdout.write(renderSeeds(plan, outcome.summary));
    process.exitCode = EXIT.ok;
  } catch (err) {
    // The seed that failed keeps its run directory; --resume DIR goes on from it.
    if (isReinsError(err)) throw new ReinsError(err.code, err.message, `${err.hint.replace(/\.$/, "")} (resume with --resume ${dir})`, { cause: err });
    throw err;
  } finally {
    progress.finish();
    progress.say(`see the runs: ${viewCommand(dir)}`);
    await provider.close();
  }
}

/** What a run takes from the command line and the progress display, one seed or several. */
function loopOptions(opts: RunCliOptions & { threads: string }, progress: Progress, signal: AbortSignal) {
  return {
    threads: Number(opts.threads),
    ...(opts.concurrency ? { concurrency: Number(opts.concurrency) } : {}),
    onEvent: (e: { type: string; [k: string]: unknown }) => progress.onEvent(e),
    log: (l: string) => progress.say(l),
    warn: (l: string) => {
      progress.finish();
      say(`warning: ${l}`);
    },
    signal,
  };
}
