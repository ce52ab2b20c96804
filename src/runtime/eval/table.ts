/** The eval summary as a terminal table: a pure string builder (no colors, no I/O). */
import type { EvalSummary, Metrics } from "./summary.js";

function fmt(v: number | null | undefined, digits = 3): string {
  return v === null || v === undefined || Number.isNaN(v) ? "—" : v.toFixed(digits);
}

function pad(s: string, width: number, right = false): string {
  return right ? s.padStart(width) : s.padEnd(width);
}

function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

export interface TableOptions {
  /** Show one row per task (default: when there are at most 40 tasks). */
  tasks?: boolean;
  /** Width limit for failure reasons (default 100). */
  width?: number;
}

export function renderEvalTable(summary: EvalSummary, opts: TableOptions = {}): string {
  const ks = summary.ks;
  const header = ["", "rollouts", "errors", "mean reward", ...ks.map((k) => `pass@${k}`), ...ks.filter((k) => k > 1).map((k) => `pass^${k}`)];
  const row = (label: string, m: Metrics) => [
    label,
    String(m.rollouts),
    String(m.errors),
    fmt(m.meanReward),
    ...ks.map((k) => fmt(m.passAt[String(k)])),
    ...ks.filter((k) => k > 1).map((k) => fmt(m.passHat[String(k)])),
  ];
  const rows: (string[] | null)[] = [row("all", summary)];
  const section = (title: string, entries: [string, Metrics][]) => {
    if (entries.length === 0) return;
    rows.push(null);
    for (const [name, m] of entries) rows.push(row(`${title} ${clip(name, 48)}`, m));
  };
  section("category", Object.entries(summary.categories));
  section("harness", Object.entries(summary.harnesses));
  const showTasks = opts.tasks ?? Object.keys(summary.tasks).length <= 40;
  if (showTasks) section("task", Object.entries(summary.tasks));

  const all = [header, ...rows.filter((r): r is string[] => r !== null)];
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => pad(c, widths[i], i > 0))
      .join("  ")
      .trimEnd();
  const out: string[] = [line(header), widths.map((w) => "─".repeat(w)).join("  ")];
  for (const r of rows) out.push(r === null ? "" : line(r));

  const width = opts.width ?? 100;
  if (summary.topFailures.length > 0) {
    out.push("", "Most common failures");
    for (const f of summary.topFailures) {
      out.push(`  ${String(f.count).padStart(4)}×  ${clip(f.name, 60)}  (${f.tasks} task${f.tasks === 1 ? "" : "s"})`);
      for (const e of f.examples) out.push(`         ${clip(e, width)}`);
    }
  }
  const unscored = [
    ...summary.verifierErrors.map((e) => ({ ...e, cause: "verifier" })),
    ...summary.infraErrors.map((e) => ({ ...e, cause: "infrastructure" })),
  ];
  if (unscored.length > 0) {
    out.push("", "Rollouts without a reward (not counted in the estimates)");
    for (const e of unscored) out.push(`  ${String(e.count).padStart(4)}×  ${e.code} (${e.cause}): ${clip(e.example, width)}`);
  }
  return `${out.join("\n")}\n`;
}
