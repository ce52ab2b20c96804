/**
 * `reins trajectories CALLS.jsonl`: build each rollout's prefix tree from a call record file,
 * apply the Algorithm's filters and print per-rollout counts (and advantages with --rewards);
 * optionally draw one rollout's tree (--svg), write the training batch (--out) or an SFT set (--sft).
 */
import type { Command } from "commander";
import pc from "picocolors";
import {
  defaultAlgorithm,
  diagnosticOf,
  hasErrors,
  loadAlgorithm,
  makeDiagnostic,
  makeProblem,
  sortDiagnostics,
  type Diagnostic,
  type Problem,
  type ResolvedAlgorithm,
} from "../../compiler/index.js";
import {
  analyzeRollouts,
  buildReport,
  buildSftSamples,
  buildTrainingBatch,
  parseCallRecords,
  parseRewards,
  readTextFile,
  renderTreeSvg,
  writeBatchDirectory,
  writeJsonl,
  writeTextFile,
  type BatchReport,
  type RewardTable,
} from "../../runtime/index.js";
import { EXIT } from "../exit-codes.js";
import { jsonFailure, problemFromDiagnostic } from "../failure.js";
import { makeDirectory, PROJECT_ROOT_OPTION, projectRootOf, writingTo } from "../io.js";
import { renderDiagnostics } from "../render/diagnostics.js";
import { renderProblems } from "../render/problems.js";

export interface TrajectoriesOptions {
  rewards?: string;
  algorithm?: string;
  json?: boolean;
  svg?: string;
  rollout?: string;
  out?: string;
  layout?: string;
  step?: string;
  sft?: string;
  minReward?: string;
  projectRoot?: string;
}

export interface Streams {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
}

export function register(program: Command): void {
  program
    .command("trajectories")
    .description("Build prefix trees from a call record file; print leaves, dropped branches, token counts and advantages per rollout")
    .argument("<calls>", "call record file (JSON lines, as the proxy writes it)")
    .option("--rewards <file>", 'JSON {"<rolloutId>": {"reward", "task", "harness"}}; enables advantages')
    .option("--algorithm <file>", "YAML with one `kind: Algorithm` document (filters, advantage, correction; default: GRPO with the compiler's defaults)")
    .option("--json", "print JSON on stdout")
    .option(...PROJECT_ROOT_OPTION)
    .option("--svg <out.svg>", "draw the prefix tree of --rollout as SVG")
    .option("--rollout <id>", "rollout to draw with --svg")
    .option("--out <dir>", "write the training batch: batch.json + little-endian arrays + batch.jsonl (needs --rewards)")
    .option("--layout <tree|paths>", "batch layout for --out", "tree")
    .option("--step <n>", "step number recorded in the batch", "0")
    .option("--sft <file>", "write SFT samples (JSONL) of rollouts with reward >= --min-reward (needs --rewards)")
    .option("--min-reward <x>", "reward threshold for --sft", "1")
    .action(async (calls: string, opts: TrajectoriesOptions) => {
      process.exitCode = await runTrajectories(calls, opts, { stdout: process.stdout, stderr: process.stderr });
    });
}

function report(io: Streams, diagnostics: Diagnostic[], limit = 20): void {
  const sorted = sortDiagnostics(diagnostics);
  if (sorted.length === 0) return;
  io.stderr.write(renderDiagnostics(sorted.slice(0, limit)));
  if (sorted.length > limit) io.stderr.write(`… and ${sorted.length - limit} more\n`);
}

/** Report a failure (the diagnostics so far, and a problem if one stopped the command): JSON on stdout with --json. */
function failed(io: Streams, json: boolean | undefined, diagnostics: Diagnostic[], problem?: Problem): number {
  const all = problem ? [...diagnostics, diagnosticOf(problem)] : diagnostics;
  if (json) {
    const problems = [...diagnostics.filter((d) => d.severity === "error").map(problemFromDiagnostic), ...(problem ? [problem] : [])];
    io.stdout.write(jsonFailure(problems, all));
  } else {
    report(io, diagnostics);
    if (problem) io.stderr.write(renderProblems([problem]));
  }
  return EXIT.failed;
}

/** A call record file is JSON lines: a raw control character means it is not one (binary data). */
function binaryDiagnostic(text: string, file: string): Diagnostic | undefined {
  const at = text.search(/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/);
  if (at < 0) return undefined;
  const line = text.slice(0, at).split("\n").length;
  return makeDiagnostic(
    "BinaryFile",
    { file, line, column: 1 },
    `The file contains binary data (character ${at}); it is not a call record file.`,
    "Pass a call record file (JSON lines), as the proxy writes it with --record FILE.",
  );
}

function usage(io: Streams, message: string): number {
  io.stderr.write(`reins trajectories: ${message}\n`);
  return EXIT.usage;
}

export async function runTrajectories(callsPath: string, opts: TrajectoriesOptions, io: Streams): Promise<number> {
  if (opts.svg && !opts.rollout) return usage(io, "--svg needs --rollout <id>");
  if ((opts.out || opts.sft) && !opts.rewards) return usage(io, "--out and --sft need --rewards <file>");
  const layout = opts.layout ?? "tree";
  if (layout !== "tree" && layout !== "paths") return usage(io, `--layout must be tree or paths, got ${layout}`);
  const step = Number(opts.step ?? "0");
  if (!Number.isInteger(step) || step < 0) return usage(io, `--step must be an integer >= 0, got ${opts.step}`);
  const minReward = Number(opts.minReward ?? "1");
  if (!Number.isFinite(minReward)) return usage(io, `--min-reward must be a number, got ${opts.minReward}`);

  const diagnostics: Diagnostic[] = [];
  let algorithm: ResolvedAlgorithm = defaultAlgorithm();
  if (opts.algorithm) {
    const loaded = loadAlgorithm(opts.algorithm, { cwd: process.cwd(), ...projectRootOf(opts) });
    diagnostics.push(...loaded.diagnostics);
    if (loaded.value) algorithm = loaded.value;
  }
  let rewards: RewardTable | undefined;
  if (opts.rewards) {
    const text = await readTextFile(opts.rewards);
    diagnostics.push(...text.diagnostics);
    if (text.value !== undefined) {
      const parsed = parseRewards(text.value, opts.rewards);
      diagnostics.push(...parsed.diagnostics);
      rewards = parsed.value;
    }
  }
  const callsText = await readTextFile(callsPath);
  diagnostics.push(...callsText.diagnostics);
  const binary = callsText.value !== undefined ? binaryDiagnostic(callsText.value, callsPath) : undefined;
  if (binary) diagnostics.push(binary);
  const records = callsText.value !== undefined && !binary ? parseCallRecords(callsText.value, callsPath) : undefined;
  if (records) diagnostics.push(...records.diagnostics);
  if (hasErrors(diagnostics) || !records) return failed(io, opts.json, diagnostics);
  if (algorithm.type === "PPO" && opts.out) {
    return failed(
      io,
      opts.json,
      diagnostics,
      makeProblem("PpoBatchUnsupported", "PPO batches need critic values per token (they come from the trainer); --out writes GRPO and RLOO batches."),
    );
  }

  const analyses = analyzeRollouts(records.value, algorithm.filters);
  if (rewards) {
    const known = new Set(analyses.map((a) => a.rollout));
    const unknown = [...rewards.keys()].filter((r) => !known.has(r));
    if (unknown.length > 0)
      io.stderr.write(
        `${pc.yellow("warning")}: ${unknown.length} rollout(s) in the rewards file have no calls: ${unknown.slice(0, 5).join(", ")}${unknown.length > 5 ? ", …" : ""}\n`,
      );
  }
  report(io, diagnostics);

  if (opts.svg) {
    const a = analyses.find((x) => x.rollout === opts.rollout);
    if (!a) {
      const ids = analyses.map((x) => x.rollout);
      return failed(
        io,
        opts.json,
        [],
        makeProblem(
          "RolloutNotFound",
          `Rollout ${opts.rollout} is not in ${callsPath} (rollouts: ${ids.slice(0, 8).join(", ")}${ids.length > 8 ? ", …" : ""}).`,
        ),
      );
    }
    const svg = opts.svg;
    await writingTo(svg, () => writeTextFile(svg, renderTreeSvg(a.tree, a.filter, a.lineage)));
    io.stderr.write(`wrote ${opts.svg}\n`);
  }

  let result: BatchReport;
  if (opts.out && rewards) {
    const built = buildTrainingBatch(analyses, { algorithm, rewards, step, layout });
    result = built.report;
    const out = opts.out;
    const manifest = await writingTo(out, async () => {
      makeDirectory(out);
      return writeBatchDirectory(out, built.batch);
    });
    io.stderr.write(
      `wrote ${opts.out}: ${(manifest.trees ?? manifest.paths ?? []).length} ${layout === "tree" ? "trees" : "paths"}, ${manifest.tokens} tokens\n`,
    );
  } else {
    result = buildReport(analyses, { algorithm, rewards });
  }
  if (opts.sft && rewards) {
    const samples = buildSftSamples(analyses, rewards, { minReward });
    const sft = opts.sft;
    await writingTo(sft, () => writeJsonl(sft, samples));
    io.stderr.write(`wrote ${opts.sft}: ${samples.length} SFT samples (reward >= ${minReward})\n`);
  }
  const noReward = result.rollouts.filter((r) => r.dropped === "NoReward").length;
  if (noReward > 0) io.stderr.write(`${pc.yellow("warning")}: ${noReward} rollout(s) have no entry in the rewards file and are left out of the batch\n`);

  if (opts.json) {
    const { type, advantage, correction, filters } = algorithm;
    io.stdout.write(`${JSON.stringify({ algorithm: { type, advantage, correction, filters }, ...result }, null, 2)}\n`);
  } else {
    io.stdout.write(formatTable(result, rewards !== undefined));
  }
  return EXIT.ok;
}

function fmt(n: number | undefined, digits = 3): string {
  if (n === undefined) return "-";
  return Number.isInteger(n) ? String(n) : n.toFixed(digits);
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  // Text columns align left, numeric columns right.
  const numeric = header.map((_, i) => rows.every((r) => r[i] === "" || r[i] === "-" || /^-?[\d.]+x?$/.test(r[i])));
  const line = (cells: string[]) =>
    `${cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join("  ")
      .trimEnd()}\n`;
  return line(header) + rows.map(line).join("");
}

function formatTable(result: BatchReport, withRewards: boolean): string {
  const header = ["rollout", "calls", "leaves", "deadLeaves", "droppedBranches", "generated", "trained", "context", "naive", "naive/tree"];
  if (withRewards) header.push("reward", "advantage");
  header.push("dropped");
  const rows = result.rollouts.map((r) => {
    const tree = r.trainedTokens + r.contextTokens;
    const cells = [
      r.rollout,
      r.calls,
      r.leaves,
      r.droppedDeadLeaves,
      r.droppedBranches,
      r.generatedTokens,
      r.trainedTokens,
      r.contextTokens,
      r.naiveTokens,
    ].map((v) => String(v));
    cells.push(tree > 0 ? `${(r.naiveTokens / tree).toFixed(2)}x` : "-");
    if (withRewards) cells.push(fmt(r.reward), fmt(r.advantage));
    cells.push(r.dropped ?? "");
    return cells;
  });
  const t = result.totals;
  const totals = ["total", t.calls, t.leaves, t.droppedDeadLeaves, t.droppedBranches, t.generatedTokens, t.trainedTokens, t.contextTokens, t.naiveTokens].map(
    (v) => String(v),
  );
  totals.push(t.treeTokens > 0 ? `${t.naiveOverTree.toFixed(2)}x` : "-");
  if (withRewards) totals.push("", "");
  totals.push(t.droppedRollouts > 0 ? `${t.droppedRollouts} rollout(s)` : "");
  let out = table(header, [...rows, totals]);
  out += `\n${t.rollouts} rollouts (${t.keptRollouts} kept), naive/trained ${t.trainedTokens > 0 ? `${t.naiveOverTrained.toFixed(2)}x` : "-"}\n`;
  if (result.groups && result.groups.length > 0) {
    const gRows = result.groups.map((g) => [
      String(g.step),
      g.task,
      g.harness,
      String(g.rollouts.length),
      fmt(g.mean),
      fmt(g.std),
      g.zeroVariance ? "yes" : "",
      g.dropped ? "yes" : "",
    ]);
    out += `\n${table(["step", "task", "harness", "rollouts", "mean", "std", "zeroVariance", "dropped"], gRows)}`;
  }
  return out;
}
