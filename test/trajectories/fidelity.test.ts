/**
 * The fidelity report's pure parts on crafted records: a prefix break of each cause, dropped side
 * classes, stored vs fresh prompt tokens, the proxy's added latency, and the trained-token check
 * that compares a batch with the records' completion ids (one corrupted token counts 1).
 */
import { describe, expect, it } from "vitest";
import { defaultAlgorithm } from "../../src/compiler/index.js";
import { formatRecordLines, parseCallRecords, type CallRecord } from "../../src/runtime/records/index.js";
import { compareWithTemplate } from "../../src/runtime/proxy/template-check.js";
import { checkTrainedTokens } from "../../src/runtime/trajectories/batch-check.js";
import { buildTrainingBatch, type RewardTable } from "../../src/runtime/trajectories/batch-builder.js";
import type { TrainingBatch } from "../../src/runtime/trajectories/batch.js";
import { percentile, summarizeFidelity } from "../../src/runtime/trajectories/fidelity.js";
import { findPrefixBreaks } from "../../src/runtime/trajectories/prefix-breaks.js";
import { analyzeRollout } from "../../src/runtime/trajectories/rollout.js";
import { appendOnlyChain, DEFAULT_SHAPE, randomCallSet, RolloutBuilder, seededRng, trailingContextChain } from "./synthetic.js";

const ALGORITHM = defaultAlgorithm();
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

/** One try's calls, spelled out: each call's prompt, completion and options. */
function calls(rollout: string, specs: { prompt: number[]; completion: number[]; callClass?: CallRecord["callClass"]; failed?: boolean }[]): CallRecord[] {
  const b = new RolloutBuilder(rollout, seededRng(1));
  for (const s of specs)
    b.call(s.prompt, s.completion, { ...(s.callClass ? { callClass: s.callClass } : {}), ...(s.failed ? { error: { kind: "engine", message: "boom" } } : {}) });
  return b.records;
}

describe("prefix breaks", () => {
  const sys = range(100, 20);
  const c0 = range(200, 5);

  it("an append-only conversation has none; a retry after a failed call is none", () => {
    const recs = calls("r", [
      { prompt: sys, completion: c0, failed: true },
      { prompt: sys, completion: c0 },
      { prompt: [...sys, ...c0, 7, 8], completion: [9] },
    ]);
    expect(findPrefixBreaks(recs)).toEqual([]);
  });

  it("classifies each cause, with the position where the ids differ", () => {
    const p1 = [...sys, ...c0, 7, 8];
    const cases: [string, CallRecord[], { cause: string; at: number; previousSeq: number }][] = [
      [
        "retry",
        calls("r", [
          { prompt: sys, completion: c0 },
          { prompt: sys, completion: [5] },
        ]),
        { cause: "retry", at: 20, previousSeq: 0 },
      ],
      [
        "completion-not-reused",
        calls("r", [
          { prompt: sys, completion: c0 },
          { prompt: [...sys, 200, 201, 999, 7], completion: [5] },
        ]),
        { cause: "completion-not-reused", at: 22, previousSeq: 0 },
      ],
      [
        "context-rewritten",
        calls("r", [
          { prompt: p1, completion: [1] },
          { prompt: [...sys.slice(0, 10), 55], completion: [5] },
        ]),
        { cause: "context-rewritten", at: 10, previousSeq: 0 },
      ],
      [
        "history-reserialized",
        calls("r", [
          { prompt: p1, completion: [1] },
          { prompt: [...sys.slice(0, 4), 66, ...p1.slice(5), 1, 3, 4], completion: [5] },
        ]),
        { cause: "history-reserialized", at: 4, previousSeq: 0 },
      ],
    ];
    for (const [name, recs, expected] of cases) {
      const breaks = findPrefixBreaks(recs);
      expect(breaks, name).toHaveLength(1);
      expect(breaks[0], name).toMatchObject({ rolloutId: "r", try: 1, seq: 1, ...expected });
    }
  });

  it("a side call between main turns breaks twice, as side-call; a main turn that changed history is classified against the last main call", () => {
    const title = { prompt: range(900, 6), completion: [901], callClass: "title" as const };
    const clean = findPrefixBreaks(calls("r", [{ prompt: sys, completion: c0 }, title, { prompt: [...sys, ...c0, 3], completion: [4] }]));
    expect(clean.map((b) => [b.seq, b.cause])).toEqual([
      [1, "side-call"],
      [2, "side-call"],
    ]);
    const changed = findPrefixBreaks(
      calls("r", [{ prompt: sys, completion: c0 }, title, { prompt: [...sys.slice(0, 3), 77, ...sys.slice(4), ...c0, 3], completion: [4] }]),
    );
    expect(changed[1]).toMatchObject({ seq: 2, previousSeq: 0, cause: "history-reserialized", at: 3 });
  });

  it("compares calls within a try only", () => {
    const recs = calls("r", [
      { prompt: sys, completion: c0 },
      { prompt: range(1, 5), completion: [1] },
    ]);
    recs[1] = { ...recs[1]!, try: 2, seq: 0 };
    expect(findPrefixBreaks(recs)).toEqual([]);
  });
});

describe("the trained-token check", () => {
  function fixture(): { records: CallRecord[]; rewards: RewardTable; batch: TrainingBatch } {
    const rng = seededRng(7);
    const records: CallRecord[] = [];
    const rewards: RewardTable = new Map();
    ["a", "b", "c"].forEach((id, k) => {
      const b = new RolloutBuilder(id, rng);
      if (k === 1) trailingContextChain(b, { ...DEFAULT_SHAPE, turns: 3, system: 30 });
      else appendOnlyChain(b, { ...DEFAULT_SHAPE, turns: 3, system: 30 });
      records.push(...b.records);
      rewards.set(id, { task: "t", harness: k === 2 ? "codex" : "claude-code", reward: k });
    });
    const analyses = ["a", "b", "c"].map((id) =>
      analyzeRollout(
        id,
        records.filter((r) => r.rolloutId === id),
        ALGORITHM.filters,
      ),
    );
    const { batch } = buildTrainingBatch(analyses, { algorithm: ALGORITHM, rewards, step: 0, layout: "tree" });
    return { records, rewards, batch };
  }
  const sources = (records: CallRecord[]) => ({
    records: new Map(["a", "b", "c"].map((id) => [id, records.filter((r) => r.rolloutId === id)])),
    filters: ALGORITHM.filters,
  });

  it("finds no mismatch in a batch built from the records, and counts every trained token per harness", () => {
    const { records, batch } = fixture();
    const check = checkTrainedTokens(batch, sources(records));
    const trained = batch.trees!.reduce((s, t) => s + t.lossMask.filter((m) => m === 1).length, 0);
    expect(trained).toBeGreaterThan(100);
    expect(check).toMatchObject({ checked: trained, mismatched: 0 });
    expect(Object.keys(check.byHarness).sort()).toEqual(["claude-code", "codex"]);
  });

  it("counts one corrupted trained token as 1, in the tree and in the per-path layout; a corrupted context token is not trained", () => {
    const { records, batch } = fixture();
    const tree = batch.trees![1]!;
    const i = tree.lossMask.lastIndexOf(1);
    tree.tokens[i] = tree.tokens[i]! + 1;
    expect(checkTrainedTokens(batch, sources(records))).toMatchObject({ mismatched: 1 });
    expect(checkTrainedTokens(batch, sources(records)).byHarness["claude-code"]!.mismatched).toBe(1);
    tree.tokens[i] = tree.tokens[i]! - 1;
    const ctx = tree.lossMask.indexOf(0);
    tree.tokens[ctx] = tree.tokens[ctx]! + 1;
    expect(checkTrainedTokens(batch, sources(records)).mismatched).toBe(0);

    const { records: r2, rewards } = fixture();
    const analyses = ["a", "b", "c"].map((id) =>
      analyzeRollout(
        id,
        r2.filter((r) => r.rolloutId === id),
        ALGORITHM.filters,
      ),
    );
    const { batch: paths } = buildTrainingBatch(analyses, { algorithm: ALGORITHM, rewards, step: 0, layout: "paths" });
    expect(checkTrainedTokens(paths, sources(r2))).toMatchObject({ mismatched: 0 });
    const p = paths.paths![2]!;
    const j = p.lossMask.indexOf(1);
    p.tokens[j] = p.tokens[j]! + 1;
    expect(checkTrainedTokens(paths, sources(r2)).mismatched).toBe(1);
  });

  it("counts a trained token at another position, and a rollout the records do not hold", () => {
    const { records, batch } = fixture();
    const tree = batch.trees![0]!;
    tree.position[tree.lossMask.indexOf(1)]! += 1;
    expect(checkTrainedTokens(batch, sources(records)).mismatched).toBe(1);
    const { records: r2, batch: b2 } = fixture();
    const trained = b2.trees![2]!.lossMask.filter((m) => m === 1).length;
    expect(checkTrainedTokens(b2, sources(r2.filter((r) => r.rolloutId !== "c"))).mismatched).toBe(trained);
  });

  it("finds no mismatch on random trees (branches, retries, failed and side calls)", () => {
    const rng = seededRng(99);
    for (let k = 0; k < 30; k++) {
      const recs = randomCallSet(rng, "x", 8);
      const a = analyzeRollout("x", recs, ALGORITHM.filters);
      const { batch } = buildTrainingBatch([a], {
        algorithm: ALGORITHM,
        rewards: new Map([["x", { task: "t", harness: "h", reward: 1 }]]),
        step: 0,
        layout: "tree",
      });
      const check = checkTrainedTokens(batch, { records: new Map([["x", recs]]), filters: ALGORITHM.filters });
      expect(check.mismatched).toBe(0);
    }
  });
});

describe("the report per harness", () => {
  it("adds up calls, stored vs fresh prompt tokens, reused completions, dropped classes, breaks, latency and trained-token checks", () => {
    const sys = range(100, 20);
    const recs = calls("r1", [
      { prompt: sys, completion: range(200, 5) },
      { prompt: range(900, 4), completion: [1], callClass: "title" },
      { prompt: [...sys, ...range(200, 5), 7, 8], completion: [9] },
    ]);
    recs[0] = {
      ...recs[0]!,
      tokenizedPromptTokens: 20,
      timings: { receivedMs: 0, engineStartMs: 2, engineDoneMs: 102, doneMs: 105 },
      templateCheck: { match: true, templateTokens: 20 },
    };
    recs[1] = { ...recs[1]!, tokenizedPromptTokens: 4, timings: { receivedMs: 0, engineStartMs: 1, engineDoneMs: 11, doneMs: 12 } };
    recs[2] = { ...recs[2]!, tokenizedPromptTokens: 2, reused: [0], timings: { receivedMs: 0, engineStartMs: 40, engineDoneMs: 50, doneMs: 90 } };
    const other = calls("r2", [{ prompt: sys, completion: [3] }]);
    other[0] = { ...other[0]!, tokenizedPromptTokens: 0, templateCheck: { match: false, templateTokens: 21, at: 19 } };
    const report = summarizeFidelity({
      rollouts: [
        { id: "r1", harness: "claude-code" },
        { id: "r2", harness: "codex" },
      ],
      calls: [...recs, ...other, ...calls("stray", [{ prompt: sys, completion: [1] }])],
      dropClasses: ["title", "compaction"],
      trained: [{ "claude-code": { checked: 10, mismatched: 0 } }, { "claude-code": { checked: 5, mismatched: 1 }, codex: { checked: 1, mismatched: 0 } }],
    });
    expect(Object.keys(report.byHarness)).toEqual(["claude-code", "codex"]);
    const cc = report.byHarness["claude-code"]!;
    expect(cc).toMatchObject({
      rollouts: 1,
      calls: 3,
      freshPromptTokens: 26,
      storedPromptTokens: 25,
      reusedCompletionTokens: 5,
      droppedByClass: { title: 1 },
      prefixBreaks: 2,
      mismatchedTrainedTokens: 1,
      checkedTrainedTokens: 15,
      templateChecked: 1,
      templateMismatches: 0,
      proxyAddedMs: { p50: 5, p99: 80 },
    });
    expect(cc.prefixBreakCauses["side-call"]).toBe(2);
    expect(report.byHarness.codex).toMatchObject({
      calls: 1,
      storedPromptTokens: 20,
      freshPromptTokens: 0,
      templateMismatches: 1,
      droppedByClass: {},
      proxyAddedMs: { p50: null, p99: null },
    });
  });

  it("percentiles are nearest-rank", () => {
    const xs = range(1, 100);
    expect([percentile(xs, 0.5), percentile(xs, 0.99), percentile([], 0.5), percentile([4], 0.99)]).toEqual([50, 99, null, 4]);
  });

  it("a first call's template check names the first differing position", () => {
    expect(compareWithTemplate([1, 2, 3], [1, 2, 3])).toEqual({ match: true, templateTokens: 3 });
    expect(compareWithTemplate([1, 2, 3], [1, 5, 3])).toEqual({ match: false, templateTokens: 3, at: 1 });
    expect(compareWithTemplate([1, 2], [1, 2, 3])).toEqual({ match: false, templateTokens: 3, at: 2 });
  });

  it("the engine's timings and the template check survive the call record file", () => {
    const [rec] = calls("r", [{ prompt: [1, 2], completion: [3] }]);
    const full: CallRecord = {
      ...rec!,
      timings: { receivedMs: 1, engineStartMs: 2, engineDoneMs: 5, doneMs: 6 },
      templateCheck: { match: false, templateTokens: 3, at: 2 },
    };
    const read = parseCallRecords(formatRecordLines([full]), "calls.jsonl");
    expect(read.diagnostics).toEqual([]);
    expect(read.value[0]).toMatchObject({ timings: full.timings, templateCheck: full.templateCheck });
    const bad = parseCallRecords(formatRecordLines([{ ...full, templateCheck: { match: "yes" } as never }]), "calls.jsonl");
    expect(bad.diagnostics[0]?.message).toContain("templateCheck");
  });
});
