import type { Command } from "commander";
import { DiagnosticsError, type Plan } from "../../compiler/index.js";
import { planSpecs } from "../../runtime/index.js";
import { EXIT } from "../exit-codes.js";
import { errorCount, printJson, PROJECT_ROOT_OPTION, projectRootOf, reportDiagnostics, writeOutputFile } from "../io.js";

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
    .option("--json", "print the summary as JSON")
    .option(...PROJECT_ROOT_OPTION)
    .action((paths: string[], opts: { out?: string; target?: string; json?: boolean; projectRoot?: string }) => {
      const r = planSpecs(paths, { ...(opts.target ? { target: opts.target } : {}), ...projectRootOf(opts) });
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
        if (summary.manifests.length > 0) lines.push(`  manifests  ${summary.manifests.join(", ")}`);
        if (opts.out) lines.push(`  written to ${opts.out}`);
        process.stdout.write(`${lines.join("\n")}\n`);
      }
      process.exitCode = EXIT.ok;
    });
}
