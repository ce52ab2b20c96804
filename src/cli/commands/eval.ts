import type { Command } from "commander";
import { createExecutor } from "../../runtime/executor/executor.js";
import { createProvider } from "../../runtime/executor/providers.js";
import { summarizeResults } from "../../runtime/executor/outcomes.js";
import { renderEvalTable } from "../../runtime/eval/index.js";
import { createJudges } from "../../runtime/executor/judge.js";
import { EXIT } from "../exit-codes.js";
import { printJson, say } from "../io.js";
import { Progress } from "../progress.js";
import { interruptible, openRun, type RunCliOptions } from "../run-support.js";

export function register(program: Command): void {
  program
    .command("eval")
    .description("Run an Evaluation (or an Experiment's evaluation without training) and report pass@k and pass^k.")
    .argument("[paths...]", "spec files or directories")
    .option("--out <dir>", "run directory (default runs/<name>-<time>)")
    .option("--resume <dir>", "continue a killed run: nothing finished runs again")
    .option("--target <name>", "the Evaluation/Experiment to run when several are given")
    .option("--concurrency <n>", "rollouts at once (default: the sandbox's concurrency)")
    .option("--json", "print the summary as JSON on stdout")
    .option("--quiet", "no progress on stderr")
    .action(async (paths: string[], opts: RunCliOptions) => {
      if (paths.length === 0 && !opts.resume) {
        say("error: give spec files, or --resume DIR");
        process.exitCode = EXIT.usage;
        return;
      }
      const { plan, store } = openRun(paths, opts);
      const steps = plan.steps.filter((s) => s.kind === "eval");
      const rollouts = plan.kind === "Evaluation" ? steps.flatMap((s) => s.rollouts) : (steps[0]?.rollouts ?? []);
      const ac = interruptible();
      const progress = new Progress(!opts.json && !opts.quiet);
      const provider = await createProvider(plan.sandbox, { hidePaths: [store.dir] });
      const judges = await createJudges(plan);
      const executor = await createExecutor({
        plan,
        store,
        provider,
        ...(judges.judge ? { judge: judges.judge } : {}),
        ...(opts.concurrency ? { concurrency: Number(opts.concurrency) } : {}),
        onEvent: (e) => progress.onEvent(e),
        signal: ac.signal,
      });
      progress.start(plan.name, rollouts.length, store.finishedIds().size);
      let results;
      try {
        results = await executor.runRollouts(rollouts, steps[0]?.index ?? 0);
      } finally {
        progress.finish();
        await executor.close();
        await judges.close();
        await provider.close();
        store.close();
      }
      if (ac.signal.aborted) {
        say(`interrupted; resume with: reins eval --resume ${store.dir}`);
        process.exitCode = EXIT.interrupted;
        return;
      }
      const ks = [...new Set([1, plan.attempts].filter((k) => k >= 1))].sort((a, b) => a - b);
      const summary = summarizeResults(results, ks);
      const out = { ...summary, infraFailures: results.filter((r) => r.status === "infra-failed").length, timeouts: results.filter((r) => r.status === "timeout").length, runDir: store.dir, planHash: plan.hash };
      store.writeJson("summary.json", out);
      if (opts.json) printJson(out);
      else process.stdout.write(`${renderEvalTable(summary)}\nrun directory: ${store.dir}\n`);
      process.exitCode = EXIT.ok;
    });
}
