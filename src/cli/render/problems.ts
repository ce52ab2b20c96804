/**
 * Human rendering of problems: `error[Code]: message` and `  hint: …`. A problem with a place in a
 * file is rendered as a diagnostic (file:line:col, code frame, hint).
 */
import pc from "picocolors";
import { diagnosticOf, type Problem } from "../../compiler/index.js";
import { printable, renderDiagnostics, useColor } from "./diagnostics.js";

export function renderProblems(problems: readonly Problem[], color = useColor()): string {
  const c = pc.createColors(color);
  const out: string[] = [];
  for (const p of problems) {
    if (p.position) {
      out.push(renderDiagnostics([diagnosticOf(p)], color, false));
      continue;
    }
    out.push(`${c.red(c.bold("error"))}[${p.code}]: ${printable(p.message)}\n  ${c.cyan("hint:")} ${printable(p.hint)}\n`);
  }
  return out.join("");
}
