import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { diffPlans, type Plan } from "../../compiler/index.js";
import { EXIT } from "../exit-codes.js";
import { printJson, say } from "../io.js";

function readPlan(file: string): Plan | string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    return `Cannot read ${file}: ${(err as Error).message}.`;
  }
  try {
    const p = JSON.parse(text) as Plan;
    if (p?.planVersion !== 1 || !Array.isArray(p.steps) || !Array.isArray(p.tasks)) return `${file} is not a reins plan (planVersion 1).`;
    return p;
  } catch (err) {
    return `${file} is not valid JSON: ${(err as Error).message}.`;
  }
}

export function register(program: Command): void {
  program
    .command("diff")
    .description("Compare two plans: hashes, tasks, steps, settings.")
    .argument("<before>", "plan.json")
    .argument("<after>", "plan.json")
    .option("--json", "print the diff as JSON")
    .action((before: string, after: string, opts: { json?: boolean }) => {
      const a = readPlan(before);
      const b = readPlan(after);
      for (const [p, f] of [[a, before], [b, after]] as const) {
        if (typeof p === "string") {
          if (opts.json) printJson({ ok: false, diagnostics: [{ code: "InvalidPlan", severity: "error", message: p, hint: "Pass files written by `reins plan --out`.", file: f, line: 1, column: 1 }] });
          else say(`error[InvalidPlan]: ${p}\n  hint: Pass files written by \`reins plan --out\`.`);
          process.exitCode = EXIT.failed;
          return;
        }
      }
      const d = diffPlans(a as Plan, b as Plan);
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
