import type { Command } from "commander";
import { isReinsError, ReinsError } from "../../compiler/index.js";
import { createProvider, runExperiment } from "../../runtime/index.js";
import { EXIT } from "../exit-codes.js";
import { printJson, PROJECT_ROOT_OPTION, say } from "../io.js";
import { Progress } from "../progress.js";
import { renderFidelityTable } from "../render/fidelity.js";
import { interruptible, openRunFor, type RunCliOptions } from "../run-support.js";
import { viewCommand } from "../view-command.js";

export function register(program: Command): void {
  program
    .command("run")
    .description("Train an Experiment: sample through the harnesses, verify, build trees, train, publish weights; evaluate held-out tasks.")
    .argument("[paths...]", "spec files or directories, or one plan file written by `reins plan --out`")
    .option("--out <dir>", "run directory (default runs/<name>-<time>)")
    .option("--resume <dir>", "continue a killed run from its last checkpoint")
    .option("--target <name>", "the Experiment to run when several are given")
    .option("--concurrency <n>", "rollouts at once (default: the sandbox's concurrency)")
    .option("--threads <n>", "CPU threads for the engine and the trainer", "2")
    .option("--json", "print the outcome as JSON on stdout")
    .option("--quiet", "no progress on stderr")
    .option(...PROJECT_ROOT_OPTION)
    .action(async (paths: string[], opts: RunCliOptions & { threads: string }) => {
      const opened = openRunFor("run", paths, opts);
      if (!opened) return;
      const { plan, store } = opened;
      const ac = interruptible();
      const quiet = Boolean(opts.quiet); // --json keeps stdout for data; the talk stays on stderr
      const started = Date.now();
      const progress = new Progress({ enabled: !quiet, since: started });
      progress.say(`run directory ${store.dir}; watch it: ${viewCommand(store.dir)}`);
      const provider = await createProvider(plan.sandbox, { hidePaths: [store.dir] });
      try {
        const outcome = await runExperiment({
          plan,
          store,
          provider,
          threads: Number(opts.threads),
          ...(opts.concurrency ? { concurrency: Number(opts.concurrency) } : {}),
          onEvent: (e) => progress.onEvent(e),
          log: (l) => progress.say(l),
          warn: (l) => {
            progress.finish();
            say(`warning: ${l}`);
          },
          signal: ac.signal,
        });
        const summary = { ...outcome, planHash: plan.hash, seconds: Math.round((Date.now() - started) / 1000) };
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
                ([h, c]) => `  ${h}: ${pct(c.before)} → ${pct(c.after)} (${c.n} rollouts each${c.gainStdErrors === null ? "" : `, ${c.gainStdErrors >= 0 ? "+" : ""}${c.gainStdErrors.toFixed(1)} standard errors`})`,
              ),
              ...(outcome.skippedSteps.length > 0 ? [`skipped steps (non-finite, nothing applied): ${outcome.skippedSteps.length}, plan steps ${outcome.skippedSteps.join(", ")}`] : []),
              "",
              renderFidelityTable(outcome.fidelity),
              ...(outcome.engine ? [`engine: ${outcome.engine.server} ${outcome.engine.version ?? "(version unknown)"}, ${outcome.engine.logprobsMode} logprobs`] : []),
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
        if (isReinsError(err)) throw new ReinsError(err.code, err.message, `${err.hint.replace(/\.$/, "")} (resume with --resume ${store.dir})`, { cause: err });
        throw err;
      } finally {
        progress.finish();
        progress.say(`see the run: ${viewCommand(store.dir)}`);
        await provider.close();
        store.close();
      }
    });
}
