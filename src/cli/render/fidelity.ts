/**
 * The fidelity report as a short table, one row per harness, for the printed summary of
 * `reins eval` and `reins run` (a pure string builder; the full report is in summary.json).
 */
import type { FidelityReport, HarnessFidelity } from "../../runtime/index.js";

const HEADER = [
  "harness",
  "calls",
  "prompt stored",
  "prompt fresh",
  "prefix breaks",
  "trained ≠ sampled",
  "template ≠",
  "dropped side calls",
  "proxy ms p50/p99",
];

function ms(v: number | null): string {
  return v === null ? "—" : String(Math.round(v));
}

function row(name: string, h: HarnessFidelity): string[] {
  const dropped = Object.entries(h.droppedByClass).map(([c, n]) => `${n} ${c}`);
  return [
    name,
    String(h.calls),
    String(h.storedPromptTokens),
    String(h.freshPromptTokens),
    String(h.prefixBreaks),
    `${h.mismatchedTrainedTokens} of ${h.checkedTrainedTokens}`,
    `${h.templateMismatches} of ${h.templateChecked}`,
    dropped.length > 0 ? dropped.join(", ") : "0",
    `${ms(h.proxyAddedMs.p50)}/${ms(h.proxyAddedMs.p99)}`,
  ];
}

export function renderFidelityTable(report: FidelityReport): string {
  const entries = Object.entries(report.byHarness);
  if (entries.length === 0) return "";
  const rows = entries.map(([name, h]) => row(name, h));
  const all = [HEADER, ...rows];
  const widths = HEADER.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  const out = ["Fidelity", line(HEADER), widths.map((w) => "─".repeat(w)).join("  "), ...rows.map(line)];
  for (const [name, h] of entries) {
    const causes = Object.entries(h.prefixBreakCauses).filter(([, n]) => n > 0);
    if (causes.length > 0) out.push(`  ${name} prefix breaks: ${causes.map(([c, n]) => `${n} ${c}`).join(", ")}`);
  }
  return `${out.join("\n")}\n`;
}
