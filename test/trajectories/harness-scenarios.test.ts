/**
 * Trees from synthetic records that mimic, at token level, how the real harnesses re-send their
 * history (append-only, trailing context message) and how they react to faults (500 retry, cut
 * stream, bad JSON), plus side calls (title, subagent, compaction). Token ids are random; what
 * matters is which prompt extends which earlier sequence.
 */
import { describe, expect, it } from "vitest";
import type { ResolvedAlgorithm } from "../../src/compiler/contract/plan.js";
import { defaultAlgorithm } from "../../src/compiler/index.js";
import type { RolloutAnalysis } from "../../src/runtime/trajectories/rollout.js";
import { analyzeRollout } from "../../src/runtime/trajectories/rollout.js";
import { packTree, unpackPaths } from "../../src/runtime/trajectories/samples.js";
import { appendOnlyChain, DEFAULT_SHAPE, RolloutBuilder, seededRng, trailingContextChain } from "./synthetic.js";

const DEFAULT_ALGORITHM = defaultAlgorithm();

const FILTERS = DEFAULT_ALGORITHM.filters;

function analyze(b: RolloutBuilder, filters: ResolvedAlgorithm["filters"] = FILTERS): RolloutAnalysis {
  return analyzeRollout(b.rollout, b.records, filters);
}

const sumCompletions = (b: RolloutBuilder, pred: (seq: number) => boolean = () => true) =>
  b.records.filter((r) => pred(r.seq)).reduce((s, r) => s + r.completionIds.length, 0);

const deadSeqs = (a: RolloutAnalysis) => a.lineage.filter((l) => l.dead).map((l) => l.seq);

describe("append-only harnesses (Claude Code, Codex, pi, Qwen Code)", () => {
  it("chain into one path: one leaf, every completion trained once, history counted once", () => {
    const b = new RolloutBuilder("claude", seededRng(1));
    const history = appendOnlyChain(b, { ...DEFAULT_SHAPE, turns: 8 });
    const a = analyze(b);
    expect(a.stats).toMatchObject({ calls: 8, leavesBefore: 1, leaves: 1, droppedDeadLeaves: 0, droppedBranches: 0 });
    expect(a.stats.trainedTokens).toBe(sumCompletions(b));
    expect(a.stats.trainedTokens + a.stats.contextTokens).toBe(history.length);
    expect(a.stats.naiveTokens).toBeGreaterThan(3 * history.length);
    expect(a.lineage.slice(0, -1).every((l) => l.continued)).toBe(true);
    const paths = unpackPaths(packTree(a.tree, a.filter, { rollout: "claude", task: "t", harness: "claude-code" }, 1, a.ownership));
    expect(paths).toHaveLength(1);
    expect(paths[0].tokens).toEqual(history);
  });
});

describe("OpenClaw chat/Messages: the internal-context message stays last", () => {
  it("every call is its own branch; carried completions are context on later branches", () => {
    const b = new RolloutBuilder("openclaw", seededRng(2));
    trailingContextChain(b, { ...DEFAULT_SHAPE, turns: 5 });
    const a = analyze(b);
    expect(a.stats).toMatchObject({ calls: 5, leavesBefore: 5, leaves: 5, droppedDeadLeaves: 0, droppedBranches: 0 });
    expect(a.lineage.every((l) => !l.continued && !l.dead && l.parentLength === 0)).toBe(true);
    // Each completion is trained on its own leaf; nothing else is.
    expect(a.stats.trainedTokens).toBe(sumCompletions(b));
    // Call 0's completion reappears in call 1's prompt, but there it is context.
    const packed = packTree(a.tree, a.filter, { rollout: "openclaw", task: "t", harness: "openclaw" }, 1, a.ownership);
    const paths = unpackPaths(packed);
    const c0 = b.records[0].completionIds;
    const p1 = paths.find((p) => p.tokens.length === b.records[1].promptIds.length + b.records[1].completionIds.length)!;
    const at = b.records[1].promptIds.findIndex((_, i) => c0.every((t, k) => b.records[1].promptIds[i + k] === t));
    expect(at).toBeGreaterThan(0);
    expect(p1.lossMask.slice(at, at + c0.length).every((m) => m === 0)).toBe(true);
  });

  it("Responses dialect keeps the prefix: one path", () => {
    const b = new RolloutBuilder("openclaw-responses", seededRng(3));
    appendOnlyChain(b, { ...DEFAULT_SHAPE, turns: 4 });
    expect(analyze(b).stats).toMatchObject({ leaves: 1, droppedDeadLeaves: 0 });
  });

  it("500 with a rewritten user message: the failed attempt is a dead leaf", () => {
    const b = new RolloutBuilder("openclaw-500", seededRng(4));
    const system = b.tokens(300);
    const context = b.tokens(50);
    const user = b.tokens(30);
    b.call([...system, ...user, ...context], b.tokens(40), { error: { kind: "engine", message: "HTTP 500" } });
    const rewritten = [...b.tokens(12), ...user, ...b.tokens(25)];
    const c1 = b.call([...system, ...rewritten, ...context], b.tokens(40));
    b.call([...system, ...rewritten, ...c1, ...b.tokens(20), ...context], b.tokens(10));
    const a = analyze(b);
    expect(deadSeqs(a)).toEqual([0]);
    expect(a.lineage[0].deadReason).toBe("failed-retried");
    expect(a.stats).toMatchObject({ leavesBefore: 3, leaves: 2, droppedDeadLeaves: 1 });
    expect(a.stats.trainedTokens).toBe(50);
  });
});

describe("faults", () => {
  it("500 retried byte-identical: the failed completion is a dead leaf", () => {
    const b = new RolloutBuilder("retry", seededRng(5));
    let h = b.tokens(500);
    h = [...h, ...b.call(h, b.tokens(30)), ...b.tokens(60)];
    b.call(h, b.tokens(35), { error: { kind: "engine", message: "HTTP 500" } });
    const retried = b.call(h, b.tokens(33));
    h = [...h, ...retried, ...b.tokens(60)];
    b.call(h, b.tokens(8));
    const a = analyze(b);
    expect(deadSeqs(a)).toEqual([1]);
    expect(a.stats).toMatchObject({ leavesBefore: 2, leaves: 1, droppedDeadLeaves: 1, droppedBranches: 0 });
    expect(a.stats.trainedTokens).toBe(30 + 33 + 8);
    // Keeping dead leaves trains the failed attempt as its own branch.
    const kept = analyze(b, { ...FILTERS, dropDeadLeaves: false });
    expect(kept.stats).toMatchObject({ leaves: 2, droppedDeadLeaves: 0 });
    expect(kept.stats.trainedTokens).toBe(30 + 35 + 33 + 8);
  });

  it("a failed call recorded without completion tokens leaves no leaf behind", () => {
    const b = new RolloutBuilder("retry-empty", seededRng(6));
    const h = b.tokens(200);
    b.call(h, [], { error: { kind: "engine", message: "HTTP 500" } });
    b.call(h, b.tokens(20));
    const a = analyze(b);
    expect(a.stats).toMatchObject({ leavesBefore: 1, leaves: 1, droppedDeadLeaves: 0 });
  });

  it("bad tool JSON discarded and retried with the same prompt (Qwen Code): dead by a continued sibling", () => {
    const b = new RolloutBuilder("badjson", seededRng(7));
    let h = b.tokens(300);
    h = [...h, ...b.call(h, b.tokens(30)), ...b.tokens(40)];
    b.call(h, b.tokens(25), { finishReason: "tool_calls" });
    h = [...h, ...b.call(h, b.tokens(26)), ...b.tokens(40)];
    b.call(h, b.tokens(5));
    const a = analyze(b);
    expect(deadSeqs(a)).toEqual([1]);
    expect(a.lineage[1].deadReason).toBe("continued-sibling");
    expect(a.stats).toMatchObject({ leaves: 1, droppedDeadLeaves: 1 });
  });

  it("cut stream + continuation (Claude Code, Qwen Code): the kept part is trained, the cut tail is a dead leaf", () => {
    const b = new RolloutBuilder("cut", seededRng(8));
    let h = b.tokens(300);
    h = [...h, ...b.call(h, b.tokens(30)), ...b.tokens(40)];
    const cut = b.call(h, b.tokens(50), { finishReason: "aborted", error: { kind: "client-disconnect", message: "stream cut" } });
    const kept = cut.slice(0, 20);
    const resumeNote = b.tokens(35);
    h = [...h, ...kept, ...resumeNote];
    b.call(h, b.tokens(15));
    const a = analyze(b);
    expect(deadSeqs(a)).toEqual([1]);
    expect(a.stats).toMatchObject({ leavesBefore: 2, leaves: 1, droppedDeadLeaves: 1 });
    // The 20 carried tokens stay generated (same nodes) and are trained on the kept path.
    expect(a.stats.trainedTokens).toBe(30 + 20 + 15);
    const paths = unpackPaths(packTree(a.tree, a.filter, { rollout: "cut", task: "t", harness: "claude-code" }, 1, a.ownership));
    expect(paths).toHaveLength(1);
    const start = 300 + 30 + 40;
    expect(paths[0].lossMask.slice(start, start + 20).every((m) => m === 1)).toBe(true);
    expect(paths[0].lossMask.slice(start + 20, start + 20 + 35).every((m) => m === 0)).toBe(true);
  });

  it("identical text in a prompt that was never generated there is context", () => {
    const b = new RolloutBuilder("echo", seededRng(9));
    const h = b.tokens(100);
    const c = b.call(h, b.tokens(20));
    // A later prompt quotes the completion after a different prefix (e.g. a rewritten history).
    b.call([...h.slice(0, 50), ...b.tokens(5), ...c], b.tokens(10));
    const a = analyze(b, { ...FILTERS, dropDeadLeaves: false });
    expect(a.stats.trainedTokens).toBe(30);
    expect(a.stats.contextTokens).toBe(100 + 5 + 20);
  });
});

describe("side calls", () => {
  it("title call (opencode) is a dropped branch; the main chain stays one path", () => {
    const b = new RolloutBuilder("opencode", seededRng(10));
    const bos = b.tokens(1);
    b.call([...bos, ...b.tokens(80)], b.tokens(8), { callClass: "title" });
    appendOnlyChain(b, { ...DEFAULT_SHAPE, turns: 3 }, bos);
    const a = analyze(b);
    expect(a.stats).toMatchObject({ leavesBefore: 2, leaves: 1, droppedBranches: 1, droppedDeadLeaves: 0 });
    expect(a.stats.trainedTokens).toBe(sumCompletions(b, (s) => s > 0));
    // With title calls kept, the title call is its own leaf (not a dead leaf).
    const all = analyze(b, { ...FILTERS, dropClasses: [] });
    expect(all.stats).toMatchObject({ leaves: 2, droppedBranches: 0, droppedDeadLeaves: 0 });
  });

  it("subagent branch is dropped; the prefix it shares with the main chain stays", () => {
    const b = new RolloutBuilder("subagent", seededRng(11));
    const shared = b.tokens(40);
    let h = [...shared, ...b.tokens(300)];
    h = [...h, ...b.call(h, b.tokens(30)), ...b.tokens(20)];
    let s = [...shared, ...b.tokens(120)];
    s = [...s, ...b.call(s, b.tokens(20), { callClass: "subagent" }), ...b.tokens(30)];
    b.call(s, b.tokens(12), { callClass: "subagent" });
    h = [...h, ...b.call(h, b.tokens(10))];
    const a = analyze(b);
    expect(a.stats).toMatchObject({ leavesBefore: 2, leaves: 1, droppedBranches: 1, droppedDeadLeaves: 0 });
    expect(a.stats.trainedTokens + a.stats.contextTokens).toBe(h.length);
  });

  it("compaction: the compaction call is dropped, the pre- and post-compaction chains are both kept", () => {
    const b = new RolloutBuilder("compaction", seededRng(12));
    const system = b.tokens(200);
    let h = [...system, ...b.tokens(30)];
    h = [...h, ...b.call(h, b.tokens(30)), ...b.tokens(50)];
    h = [...h, ...b.call(h, b.tokens(30)), ...b.tokens(50)];
    const summary = b.call([...h, ...b.tokens(20)], b.tokens(60), { callClass: "compaction" });
    // The harness restarts from the system prompt with the summary as a user message; one final call.
    b.call([...system, ...b.tokens(5), ...summary, ...b.tokens(10)], b.tokens(12));
    const a = analyze(b);
    expect(deadSeqs(a)).toEqual([]);
    expect(a.stats).toMatchObject({ leavesBefore: 2, leaves: 2, droppedBranches: 1, droppedDeadLeaves: 0 });
    expect(a.stats.trainedTokens).toBe(30 + 30 + 12);
  });

  it("maxBranches drops an over-forked rollout", () => {
    const b = new RolloutBuilder("forked", seededRng(13));
    trailingContextChain(b, { ...DEFAULT_SHAPE, turns: 6 });
    const a = analyze(b, { ...FILTERS, maxBranches: 4 });
    expect(a.dropped).toBe("MaxBranches");
    expect(a.stats).toMatchObject({ leaves: 6, trainedTokens: 0, contextTokens: 0 });
    expect(analyze(b, { ...FILTERS, maxBranches: 6 }).dropped).toBeNull();
  });
});
