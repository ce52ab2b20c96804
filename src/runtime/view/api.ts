/**
 * The viewer's JSON API over one or two run directories. Every answer is computed from the files
 * as they are now (indexes refresh from where they stopped). Ids in paths are looked up in the
 * run's own index and never joined into a file path, so `../../etc/passwd` or an id with slashes
 * is simply not found. Files are read through each run's RunRoot: one it refuses (a link out of the
 * run directory, a FIFO or device, a file over its cap) is listed in the overview's `notes`, or
 * answered with the refusal (403 for harness output, `refused` beside `recorded: false` for a diff).
 */
import { HARNESS_OUTPUT_DIR, WORKSPACE_DIFF_DIR } from "../store/run-store.js";
import { buildHeldOut, buildMetricSeries, buildPhaseOverview, buildStepPoints, buildStepTiming, phaseOf, type Phase } from "./overview.js";
import { analyze, callJson, groupAdvantages, lastTry, siblingsOf, tokenPage, treeJson, treeSvg, type Analyzed } from "./rollout-detail.js";
import type { RolloutRow, RunData } from "./run-data.js";
import { readRunFile, readWholeRunFile, TrainerLogprobs, tryFileName } from "./run-files.js";
import { VIEW_LIMITS } from "./run-root.js";
import { compareSeedRuns, readPlanSeeds, readSeedRuns } from "./seed-runs.js";
import { decodeText, pieces, tokenTextFor, type TokenText } from "./token-text.js";

export interface ApiAnswer {
  status: number;
  type: "json" | "svg" | "text";
  body: string;
}

const notFound = (what: string): ApiAnswer => ({ status: 404, type: "json", body: JSON.stringify({ error: `${what} not found` }) });
const json = (value: unknown): ApiAnswer => ({ status: 200, type: "json", body: JSON.stringify(value) });

const PAGE_TOKENS = 4000;

export class ViewApi {
  private analyses = new Map<string, Analyzed>();
  private texts = new Map<RunData, Promise<TokenText>>();
  private trainer = new Map<RunData, TrainerLogprobs>();

  constructor(readonly runs: readonly RunData[]) {}

  async answer(path: string, query: URLSearchParams): Promise<ApiAnswer> {
    const parts = path.split("/").slice(1);
    let segments: string[];
    try {
      segments = parts.map((p) => decodeURIComponent(p));
    } catch {
      return notFound("path");
    }
    if (segments[0] !== "api") return notFound("path");
    if (segments.length === 2 && segments[1] === "runs")
      return json(this.runs.map((r, i) => ({ index: i, name: r.plan().name, dir: r.dir, seeds: readPlanSeeds(r)?.seeds ?? null })));
    if (segments.length === 2 && segments[1] === "seeds") return json(this.seeds());
    if (segments[1] !== "runs" || segments.length < 4) return notFound("path");
    const run = /^[0-9]$/.test(segments[2]) ? this.runs[Number(segments[2])] : undefined;
    if (!run) return notFound("run");
    const [what, id, sub, arg] = segments.slice(3);
    if (segments.length === 4 && what === "overview") return json(this.overview(run));
    if (segments.length === 4 && what === "rollouts") return json(this.table(run));
    if (segments.length === 4 && what === "group") return this.group(run, query);
    if (what !== "rollouts" || id === undefined) return notFound("path");
    const row = run.rollout(id);
    if (!row) return notFound("rollout");
    if (segments.length === 5) return json(this.rollout(run, row));
    if (segments.length === 6 && sub === "tree") return json(treeJson(this.analyzed(run, row)));
    if (segments.length === 6 && sub === "diff") return this.diff(run, row);
    if (segments.length === 6 && sub === "calls") return json(this.callList(run, row));
    if (segments.length === 6 && sub === "tree.svg") return { status: 200, type: "svg", body: treeSvg(this.analyzed(run, row)) };
    if (segments.length === 7 && sub === "output" && (arg === "stdout" || arg === "stderr")) return this.output(run, row, arg);
    if (segments.length === 7 && sub === "calls" && /^[0-9]{1,9}$/.test(arg)) return this.call(run, row, Number(arg), query);
    return notFound("path");
  }

  overview(run: RunData) {
    const rows = run.rolloutRows();
    const plan = run.plan();
    const phases = new Map<Phase, RolloutRow[]>();
    for (const r of rows) {
      const p = phaseOf(r, plan);
      let list = phases.get(p);
      if (!list) phases.set(p, (list = []));
      list.push(r);
    }
    const order: Phase[] = ["train", "eval", "held-out", "sft"];
    const events = run.stepEvents();
    const train = phases.get("train") ?? phases.get("eval") ?? [];
    const summary = run.json("summary.json") as Record<string, unknown> | null;
    return {
      run: { name: plan.name, kind: plan.kind, dir: run.dir, manifest: run.json("manifest.json") },
      rollouts: rows.length,
      phases: order.filter((p) => phases.has(p)).map((p) => buildPhaseOverview(p, phases.get(p)!, plan)),
      steps: buildStepPoints(train),
      heldOut: buildHeldOut(events),
      metrics: buildMetricSeries(run.metricRows()),
      timing: buildStepTiming(events),
      finished: summary !== null,
      summary: summary
        ? {
            heldOut: summary.heldOut ?? null,
            fidelity: summary.fidelity ?? null,
            steps: summary.steps ?? null,
            seconds: summary.seconds ?? null,
            interrupted: summary.interrupted ?? null,
          }
        : null,
      notes: run.notes(),
    };
  }

  /**
   * The multi-seed run directories among the runs: each seed's held-out numbers and their spread;
   * with two, the second's mean gain minus the first's with Welch's 95% interval.
   */
  seeds() {
    const runs = this.runs.flatMap((r, index) => {
      const seeds = readSeedRuns(r);
      return seeds ? [{ index, ...seeds }] : [];
    });
    return { runs, difference: runs.length === 2 ? compareSeedRuns(runs[0]!, runs[1]!) : null };
  }

  table(run: RunData) {
    const plan = run.plan();
    const rows = run.rolloutRows();
    return {
      columns: ["id", "step", "task", "harness", "category", "phase", "status", "reward", "passed", "calls", "durationMs", "failure", "attempt"],
      rows: rows.map((r) => [
        r.id,
        r.step,
        r.task,
        r.harness,
        r.category || plan.categories.get(r.task) || "",
        phaseOf(r, plan),
        r.status,
        r.reward,
        r.passed,
        r.calls,
        r.durationMs,
        r.failure,
        r.attempt,
      ]),
    };
  }

  rollout(run: RunData, row: RolloutRow) {
    const record = run.rolloutRecord(row);
    const siblings = siblingsOf(run, row);
    const advantages = groupAdvantages(siblings, run.plan().algorithm);
    // No call index here: the first paint of a rollout never waits for calls.jsonl to be indexed.
    return {
      row: { ...row, span: undefined, phase: phaseOf(row, run.plan()) },
      record,
      advantage: advantages.get(row.id) ?? null,
      siblings: siblings.map((s) => ({ id: s.id, reward: s.reward, passed: s.passed, advantage: advantages.get(s.id) ?? null })),
    };
  }

  /** Where the rollout's calls are in calls.jsonl (its last try's; earlier tries' counted). */
  callList(run: RunData, row: RolloutRow) {
    const refs = run.callRefs(row.id);
    return {
      calls: lastTry(refs).map((r) => ({ seq: r.seq, try: r.try, bytes: r.span.length })),
      callBytes: refs.reduce((s, r) => s + r.span.length, 0),
      earlierTryCalls: refs.length - lastTry(refs).length,
    };
  }

  /** Load each run's tokenizer ahead of the first token view. */
  async warmTokenizers(): Promise<void> {
    for (const run of this.runs) await this.tokenText(run);
  }

  private tokenText(run: RunData): Promise<TokenText> {
    let text = this.texts.get(run);
    if (!text) this.texts.set(run, (text = tokenTextFor(run.plan().model)));
    return text;
  }

  private analyzed(run: RunData, row: RolloutRow): Analyzed {
    const key = `${this.runs.indexOf(run)}\u0000${row.id}\u0000${run.callRefs(row.id).length}`;
    const hit = this.analyses.get(key);
    if (hit) {
      this.analyses.delete(key);
      this.analyses.set(key, hit);
      return hit;
    }
    const a = analyze(run, row);
    this.analyses.set(key, a);
    while (this.analyses.size > 4) this.analyses.delete(this.analyses.keys().next().value as string);
    return a;
  }

  private async call(run: RunData, row: RolloutRow, seq: number, query: URLSearchParams): Promise<ApiAnswer> {
    const a = this.analyzed(run, row);
    const record = a.records.find((r) => r.seq === seq);
    const from = Number(query.get("from") ?? "0");
    let trainer = this.trainer.get(run);
    if (!trainer) this.trainer.set(run, (trainer = new TrainerLogprobs(run.root)));
    const page = tokenPage(a, seq, Number.isInteger(from) && from >= 0 ? from : 0, PAGE_TOKENS, trainer.of(row.step, row.id));
    if (!page || !record) return notFound("call");
    const t = await this.tokenText(run);
    const call = callJson(
      a,
      a.analysis.tree.calls.findIndex((c) => c.seq === seq),
    );
    const conversation = t.tokenizer
      ? {
          prompt: decodeText(t.tokenizer, record.promptIds.slice(call.parentLength)),
          completion: decodeText(t.tokenizer, record.completionIds),
          promptFrom: call.parentLength,
        }
      : null;
    return json({ ...page, pieces: t.tokenizer ? pieces(t.tokenizer, page.ids) : null, tokenizerMissing: t.missing, conversation, call });
  }

  private output(run: RunData, row: RolloutRow, stream: "stdout" | "stderr"): ApiAnswer {
    const name = tryFileName(row.id, run.rolloutRecord(row)?.tries ?? 1, `.${stream}`);
    const read = readRunFile(run.root, HARNESS_OUTPUT_DIR, name, VIEW_LIMITS.outputTailBytes);
    if (read.ok) return { status: 200, type: "text", body: read.value };
    if (!read.refusal) return { status: 200, type: "text", body: "" };
    return { status: 403, type: "json", body: JSON.stringify({ error: read.refusal.message, code: read.refusal.code, file: read.refusal.file }) };
  }

  /** The last try's workspace diff; `recorded: false` for a run (or try) that kept none. */
  private diff(run: RunData, row: RolloutRow): ApiAnswer {
    const name = tryFileName(row.id, run.rolloutRecord(row)?.tries ?? 1, ".json");
    const read = readWholeRunFile(run.root, WORKSPACE_DIFF_DIR, name, VIEW_LIMITS.diffBytes);
    if (!read.ok) return json(read.refusal ? { recorded: false, refused: read.refusal } : { recorded: false });
    try {
      return json({ recorded: true, ...(JSON.parse(read.value) as object) });
    } catch {
      return json({ recorded: false });
    }
  }

  private group(run: RunData, query: URLSearchParams): ApiAnswer {
    const step = Number(query.get("step"));
    const task = query.get("task") ?? "";
    const harness = query.get("harness") ?? "";
    const rows = run.rolloutRows().filter((r) => r.step === step && r.task === task && r.harness === harness);
    if (rows.length === 0) return notFound("group");
    const advantages = groupAdvantages(rows, run.plan().algorithm);
    return json({
      step,
      task,
      harness,
      rollouts: rows.map((r) => {
        const record = run.rolloutRecord(r);
        return {
          id: r.id,
          attempt: r.attempt,
          status: r.status,
          reward: r.reward,
          passed: r.passed,
          calls: r.calls,
          durationMs: r.durationMs,
          failure: r.failure,
          advantage: advantages.get(r.id) ?? null,
          verifier: record?.verifier ?? null,
        };
      }),
    });
  }
}
