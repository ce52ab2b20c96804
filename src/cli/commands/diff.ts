import type { Command } from "commander";
import { diffPlans, type Plan } from "../../compiler/index.js";
import { ReinsError } from "../../compiler/index.js";
import { EXIT } from "../exit-codes.js";
import { printJson } from "../io.js";
import { readPlanFile } from "../plan-file.js";

function readPlan(file: string): Plan {
  const read = readPlanFile(file);
  if (!read.ok) throw ReinsError.of(read.problem);
  return read.value;
}

export function register(program: Command): void {
  program
    .command("diff")
    .description("Compare two plans: hashes, tasks, steps, settings.")
    .argument("<before>", "plan.json")
    .argument("<after>", "plan.json")
    .option("--json", "print the diff as JSON")
    .action((before: string, after: string, opts: { json?: boolean }) => {
      const d = diffPlans(readPlan(before), readPlan(after));
      if (opts.json) printJson({ ok: true, ...d });
      else {
        const lines = [d.same ? `same plan ${d.hashes.before}` : `${d.hashes.before}\n→ ${d.hashes.after}`];
        if (d.tasks.added.length) lines.push(`tasks added (${d.tasks.added.length}): ${d.tasks.added.slice(0, 20).join(", ")}`);
        if (d.tasks.removed.length) lines.push(`tasks removed (${d.tasks.removed.length}): ${d.tasks.removed.slice(0, 20).join(", ")}`);
        if (d.tasks.changed.length) lines.push(`tasks changed (${d.tasks.changed.length}): ${d.tasks.changed.slice(0, 20).join(", ")}`);
        lines.push(`steps ${d.steps.before} → ${d.steps.after} (${d.steps.changed.length} changed), rollouts ${d.rollouts.before} → ${d.rollouts.after}`);
        for (const c of d.changes.slice(0, 50)) lines.push(`  ${c.path}: ${JSON.stringify(c.before)} → ${JSON.stringify(c.after)}`);
        process.stdout.write(`${lines.join("\n")}\n`);
      }
      process.exitCode = EXIT.ok;
    });
}
