import type { Command } from "commander";
import { renderEvalTable, runEvaluation } from "../../runtime/index.js";
import { makeProblem, type Problem } from "../../compiler/index.js";
import { EXIT } from "../exit-codes.js";
import { printJson, PROJECT_ROOT_OPTION, say } from "../io.js";
import { Progress } from "../progress.js";
import { renderFidelityTable } from "../render/fidelity.js";
import { renderProblems } from "../render/problems.js";
import { interruptible, openRunFor, type RunCliOptions } from "../run-support.js";
import { viewCommand } from "../view-command.js";

export function register(program: Command): void {
  program
    .command("eval")
    .description("Run an Evaluation (or an Experiment's evaluation without training) and report pass@k and pass^k.")
    .argument("[paths...]", "spec files or directories, or one plan file written by `reins plan --out`")
    .option("--out <dir>", "run directory (default runs/<name>-<time>)")
    .option("--resume <dir>", "continue a killed run: nothing finished runs again")
    .option("--target <name>", "the Evaluation/Experiment to run when several are given")
    .option("--concurrency <n>", "rollouts at once (default: the sandbox's concurrency)")
    .option("--json", "print the summary as JSON on stdout")
    .option("--quiet", "no progress on stderr")
    .option(...PROJECT_ROOT_OPTION)
    .action(async (paths: string[], opts: RunCliOptions) => {
      const opened = openRunFor("eval", paths, opts);
      if (!opened) return;
      const { plan, store } = opened;
      const ac = interruptible();
      const progress = new Progress(!opts.quiet); // on stderr, with or without --json
      progress.say(`run directory ${store.dir}; watch it: ${viewCommand(store.dir)}`);
      let outcome;
      try {
        outcome = await runEvaluation({
          plan,
          store,
          ...(opts.concurrency ? { concurrency: Number(opts.concurrency) } : {}),
          onStart: (total, done) => progress.start(plan.name, total, done),
          onEvent: (e) => progress.onEvent(e),
          signal: ac.signal,
          log: (line) => progress.say(line),
        });
      } catch (err) {
        // Ctrl-C while a served engine was starting: nothing ran yet; an interruption, not a failure.
        if (!ac.signal.aborted) throw err;
        say(`interrupted before the first rollout; resume with: reins eval --resume ${store.dir}`);
        process.exitCode = EXIT.interrupted;
        return;
      } finally {
        progress.finish();
        progress.say(`see the run: ${viewCommand(store.dir)}`);
        store.close();
      }
      const { interrupted, ...summary } = outcome;
      if (interrupted) {
        say(`interrupted; resume with: reins eval --resume ${store.dir}`);
        process.exitCode = EXIT.interrupted;
        return;
      }
      if (opts.json) printJson(summary);
      else {
        const engine = summary.engine
          ? `engine: ${summary.engine.server} ${summary.engine.version ?? "(version unknown)"}, ${summary.engine.logprobsMode} logprobs\n`
          : "";
        const fidelity = summary.fidelity ? renderFidelityTable(summary.fidelity) : `evaluation only: ${summary.evaluationOnly}`;
        process.stdout.write(`${renderEvalTable(summary)}\n${fidelity}\n${engine}run directory: ${store.dir}\n`);
      }
      // The summary is printed either way; a run that scored nothing is still a failure.
      const unscored = unscoredProblem(summary);
      if (unscored) process.stderr.write(renderProblems([unscored]));
      process.exitCode = unscored ? EXIT.failed : EXIT.ok;
    });
}

/**
 * Why an evaluation measured nothing: every rollout ended without a reward (its sandbox, harness or
 * engine failed, or its verifier did), so no figure it printed means anything and the exit code is 1.
 */
export function unscoredProblem(summary: { rollouts: number; errors: number; infraErrors: ErrorCount[]; verifierErrors: ErrorCount[] }): Problem | undefined {
  if (summary.rollouts === 0 || summary.errors < summary.rollouts) return undefined;
  const causes = [...summary.infraErrors, ...summary.verifierErrors].sort((a, b) => b.count - a.count);
  const listed = causes
    .slice(0, 3)
    .map((c) => `${c.code} ×${c.count} (${c.example})`)
    .join("; ");
  return makeProblem(
    "NothingScored",
    `None of the ${summary.rollouts} rollouts got a reward, so this evaluation measured nothing: ${listed || "no cause recorded"}.`,
  );
}

interface ErrorCount {
  code: string;
  count: number;
  example: string;
}
