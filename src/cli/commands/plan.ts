import type { Command } from "commander";
import { DiagnosticsError, type Plan } from "../../compiler/index.js";
import { planSpecs } from "../../runtime/index.js";
import { EXIT } from "../exit-codes.js";
import { errorCount, printJson, PROJECT_ROOT_OPTION, projectRootOf, reportDiagnostics, say, writeOutputFile } from "../io.js";
import { parseSeeds } from "../run-support.js";

export function summarizePlan(plan: Plan, out?: string) {
  const rollouts = plan.steps.reduce((n, s) => n + s.rollouts.length, 0);
  return {
    hash: plan.hash,
    kind: plan.kind,
    name: plan.name,
    tasks: plan.tasks.length,
    harnesses: plan.harnesses.map((h) => h.name),
    pairs: plan.pairs.length,
    steps: plan.steps.length,
    rollouts,
    estimate: plan.estimate,
    ...(plan.seeds ? { seeds: plan.seeds } : {}),
    manifests: plan.manifests.map((m) => `${String(m.kind)}/${String((m.metadata as { name?: string } | undefined)?.name ?? "")}`),
    ...(out ? { out } : {}),
  };
}

export function register(program: Command): void {
  program
    .command("plan")
    .description("Compile specs into the content-hashed execution plan; `reins run/eval plan.json` runs the file --out writes, exactly as written.")
    .argument("<paths...>", "spec files or directories")
    .option("--out <file>", "write the plan here (e.g. plan.json), to review and then run")
    .option("--target <name>", "the Experiment or Evaluation to plan when several are given")
    .option("--seeds <list>", "plan an Experiment once per seed, e.g. --seeds 1,2,3 (in place of the spec's seed/seeds)")
    .option("--json", "print the summary as JSON")
    .option(...PROJECT_ROOT_OPTION)
    .action((paths: string[], opts: { out?: string; target?: string; seeds?: string; json?: boolean; projectRoot?: string }) => {
      const seeds = opts.seeds === undefined ? undefined : parseSeeds(opts.seeds);
      if (seeds && "error" in seeds) {
        say(`error: ${seeds.error}`);
        process.exitCode = EXIT.usage;
        return;
      }
      const r = planSpecs(paths, { ...(opts.target ? { target: opts.target } : {}), ...(seeds ? { seeds: seeds.seeds } : {}), ...projectRootOf(opts) });
      if (errorCount(r.diagnostics) > 0 || !r.value) throw new DiagnosticsError(r.diagnostics);
      const plan = r.value;
      if (opts.out) writeOutputFile(opts.out, `${JSON.stringify(plan, null, 2)}\n`);
      const summary = summarizePlan(plan, opts.out);
      if (opts.json) printJson({ ok: true, ...summary, diagnostics: r.diagnostics });
      else {
        reportDiagnostics(r.diagnostics, false);
        const lines = [
          `plan ${summary.hash}`,
          `  ${summary.kind} ${summary.name}`,
          `  tasks      ${summary.tasks}`,
          `  harnesses  ${summary.harnesses.join(", ")}`,
          `  pairs      ${summary.pairs}`,
          `  steps      ${summary.steps}`,
          `  rollouts   ${summary.rollouts}`,
          `  estimate   ~${summary.estimate.sandboxMinutes} sandbox-minutes, ~${summary.estimate.tokens} tokens (rough)`,
        ];
        if (summary.seeds)
          lines.push(`  seeds      ${summary.seeds.join(", ")} (a run each, one after another: steps and rollouts are one seed's, the estimate all of them)`);
        if (summary.manifests.length > 0) lines.push(`  manifests  ${summary.manifests.join(", ")}`);
        if (opts.out) lines.push(`  written to ${opts.out}`);
        process.stdout.write(`${lines.join("\n")}\n`);
      }
      process.exitCode = EXIT.ok;
    });
}
