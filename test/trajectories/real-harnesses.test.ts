/**
 * Records captured from the real harnesses (through the real proxy, generated at run time) build
 * into the trees one expects: Claude Code's and Codex's calls chain into one path; OpenClaw over
 * chat keeps its context message last, so its two calls are two trained leaves that diverge inside
 * the first prompt; a harness's retry after a cut stream, answered differently, leaves the cut
 * completion as a dead leaf; an engine error leaves nothing to train.
 */
import { describe, expect, it } from "vitest";
import type { ResolvedHarness, ScriptedTurn } from "../../src/compiler/contract/plan.js";
import type { CallRecord } from "../../src/runtime/records/index.js";
import { defaultAlgorithm } from "../../src/compiler/index.js";
import { analyzeRollout } from "../../src/runtime/trajectories/index.js";
import { runScenario, scriptedModel, skipHarness, writeRecords, OUTPUT_DIR } from "../harness/scenario.js";
import path from "node:path";

const filters = defaultAlgorithm().filters;

function analyze(records: CallRecord[]) {
  return analyzeRollout(records[0]!.rolloutId, records, filters);
}

function scriptOf(harness: string): ScriptedTurn[] {
  const e = scriptedModel(harness).engine;
  if (e.type !== "scripted") throw new Error("scripted example expected");
  return e.script;
}

describe.skipIf(skipHarness("claude-code"))("trees from real Claude Code records", () => {
  it("a basic run chains into one path: every generated token trained once", async () => {
    const run = await runScenario({ harness: "claude-code", label: "tree-claude-basic" });
    expect(run.hello).toBe("hi");
    const a = analyze(run.records);
    expect(a.stats.calls).toBe(2);
    expect(a.stats.leaves).toBe(1);
    expect(a.stats.droppedDeadLeaves).toBe(0);
    const generated = run.records.reduce((n, r) => n + r.completionIds.length, 0);
    expect(a.stats.generatedTokens).toBe(generated);
    expect(a.stats.trainedTokens).toBe(generated);
    expect(a.stats.naiveTokens).toBeGreaterThan(a.stats.trainedTokens + a.stats.contextTokens);
  }, 120_000);

  it("a cut stream answered differently on retry leaves the cut completion as a dead leaf", async () => {
    const [write, final] = scriptOf("claude-code");
    const cut: ScriptedTurn = { ...write!, text: "Let me write that file.", fault: "cut-stream" };
    const run = await runScenario({ harness: "claude-code", label: "tree-claude-cut", script: [cut, write!, final!] });
    expect(run.hello).toBe("hi");
    await writeRecords(path.join(OUTPUT_DIR, "tree-claude-cut.calls.jsonl"), run.records);
    const a = analyze(run.records);
    expect(run.records.length).toBe(3);
    expect(run.records[0]!.finishReason).toBe("aborted");
    expect(a.stats.leavesBefore).toBe(2);
    expect(a.stats.droppedDeadLeaves).toBe(1);
    expect(a.stats.leaves).toBe(1);
    // The dead leaf's tokens are generated but not trained.
    expect(a.stats.trainedTokens).toBe(run.records[1]!.completionIds.length + run.records[2]!.completionIds.length);
  }, 120_000);
});

describe.skipIf(skipHarness("codex"))("trees from real Codex records", () => {
  it("chain into one path", async () => {
    const run = await runScenario({ harness: "codex", label: "tree-codex-basic" });
    expect(run.hello).toBe("hi");
    const a = analyze(run.records);
    expect(a.stats.leaves).toBe(1);
    expect(a.stats.droppedDeadLeaves).toBe(0);
  }, 120_000);
});

describe.skipIf(skipHarness("openclaw"))("trees from real OpenClaw records over chat", () => {
  it("are two trained leaves that diverge inside the first prompt (its context message stays last)", async () => {
    const run = await runScenario({
      harness: "openclaw",
      label: "tree-openclaw-chat",
      adjust: (h: ResolvedHarness) => ({
        ...h,
        homeFiles: h.homeFiles.map((f) => ({ ...f, content: f.content.replace(/openai-responses/g, "openai-completions") })),
        dialect: "openai-chat",
      }),
      timeoutMs: 180_000,
    });
    expect(run.hello).toBe("hi");
    const [c1, c2] = run.records;
    let shared = 0;
    while (shared < c1!.promptIds.length && c1!.promptIds[shared] === c2!.promptIds[shared]) shared++;
    expect(shared).toBeLessThan(c1!.promptIds.length);
    const a = analyze(run.records);
    expect(a.stats.leaves).toBe(2);
    expect(a.stats.droppedDeadLeaves).toBe(0);
    // Call 1's completion reappears in call 2's prompt from the stored ids: the same tree node, trained once.
    expect(a.stats.trainedTokens).toBe(c1!.completionIds.length + c2!.completionIds.length);
  }, 240_000);
});

describe("trees from real reins-agent records", () => {
  it("an engine error then a retry: the failed call adds nothing to train", async () => {
    const [write, final] = scriptOf("reins-agent");
    const run = await runScenario({ harness: "reins-agent", label: "tree-agent-engine-error", script: [{ fault: "engine-error" }, write!, final!] });
    expect(run.hello).toBe("hi");
    const a = analyze(run.records);
    expect(run.records[0]!.error?.kind).toBe("engine");
    expect(a.stats.leaves).toBe(1);
    expect(a.stats.trainedTokens).toBe(run.records[1]!.completionIds.length + run.records[2]!.completionIds.length);
  }, 60_000);
});
