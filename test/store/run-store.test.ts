/**
 * The run store keeps calls and results through the record module: calls first, then the result;
 * after a crash, a torn last line and the calls of unfinished rollouts are gone on resume.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Plan } from "../../src/compiler/contract/plan.js";
import { type CallRecord, formatRecordLine, type RolloutResult } from "../../src/runtime/records/index.js";
import { RunStore } from "../../src/runtime/store/run-store.js";

const plan = { hash: "sha256:0123456789abcdef0123456789abcdef" } as Plan;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function newRun(): { dir: string; store: RunStore } {
  const parent = mkdtempSync(join(tmpdir(), "reins-store-"));
  dirs.push(parent);
  const dir = join(parent, "run");
  return { dir, store: RunStore.open(dir, plan, { resume: false }).store! };
}

function callOf(rolloutId: string, seq: number, tryNumber = 1): CallRecord {
  return {
    v: 2,
    rolloutId,
    try: tryNumber,
    seq,
    dialect: "openai-chat",
    model: "m",
    stream: true,
    promptIds: [1, 2, 3 + seq],
    completionIds: [7],
    completionLogprobs: [-0.5],
    finishReason: "stop",
    parse: { ok: true },
    callClass: "main",
    reused: [],
    tokenizedPromptTokens: 3,
    weightsVersion: "v0",
    timings: { receivedMs: 1, doneMs: 2 },
  };
}

function resultOf(id: string, tries = 1): RolloutResult {
  return {
    id,
    step: 0,
    task: "t",
    harness: "h",
    pair: "t@h",
    attempt: 0,
    category: "c",
    status: "ok",
    reward: 1,
    passed: true,
    tries,
    durationMs: 5,
    phases: {},
    calls: 2,
    harnessExit: { code: 0, signal: null, timedOut: false },
    verifier: null,
    retries: [],
    finishedAt: "2026-01-01T00:00:00.000Z",
  };
}

describe("run store", () => {
  it("stores a finished rollout's calls (with their try) and its result, and reads them back", () => {
    const { store } = newRun();
    const calls = [callOf("0-0-0", 0, 2), callOf("0-0-0", 1, 2)];
    store.finish(resultOf("0-0-0", 2), calls);
    store.finish(resultOf("0-0-1"), []);
    expect(store.calls()).toEqual(calls);
    expect(store.results().map((r) => [r.id, r.tries])).toEqual([
      ["0-0-0", 2],
      ["0-0-1", 1],
    ]);
    store.close();
  });

  it("refuses to store a call under another rollout's result", () => {
    const { store } = newRun();
    expect(() => store.finish(resultOf("0-0-0"), [callOf("0-0-9", 0)])).toThrow(/0-0-9/);
    store.close();
  });

  it("on resume drops the calls of an unfinished rollout and a torn result line, keeps the rest", () => {
    const { dir, store } = newRun();
    store.finish(resultOf("0-0-0"), [callOf("0-0-0", 0)]);
    store.close();
    // A crash: the next rollout's calls are appended, its result line is torn half-way.
    appendFileSync(join(dir, "calls.jsonl"), formatRecordLine(callOf("0-0-1", 0)));
    appendFileSync(join(dir, "rollouts.jsonl"), formatRecordLine(resultOf("0-0-1")).slice(0, 30));
    const resumed = RunStore.open(dir, plan, { resume: true }).store!;
    expect([...resumed.finishedIds()]).toEqual(["0-0-0"]);
    expect(resumed.calls().map((c) => c.rolloutId)).toEqual(["0-0-0"]);
    expect(readFileSync(join(dir, "rollouts.jsonl"), "utf8")).toBe(formatRecordLine(resultOf("0-0-0")));
    resumed.finish(resultOf("0-0-1"), [callOf("0-0-1", 0)]);
    expect(resumed.calls().map((c) => [c.rolloutId, c.seq])).toEqual([
      ["0-0-0", 0],
      ["0-0-1", 0],
    ]);
    const events = readFileSync(join(dir, "events.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(events.at(-1)).toMatchObject({ type: "resumed", finished: 1 });
    expect(events.at(-1)).not.toHaveProperty("unreadableLines");
    resumed.close();
  });

  it("resumes a run whose calls were written in version 1 (tagged with the plan's rollout id)", () => {
    const { dir, store } = newRun();
    store.finish(resultOf("0-0-0", 2), []);
    store.close();
    const { v: _v, rolloutId: _id, try: _try, ...rest } = callOf("0-0-0", 0);
    appendFileSync(join(dir, "calls.jsonl"), `${JSON.stringify({ ...rest, v: 1, rollout: "0-0-0.t2", rolloutId: "0-0-0" })}\n`);
    const resumed = RunStore.open(dir, plan, { resume: true }).store!;
    expect(resumed.calls()).toEqual([callOf("0-0-0", 0)]);
    resumed.close();
  });
});

describe("harness output", () => {
  it("keeps each try's stdout and stderr under harness-output/, saying when only the tail was kept", () => {
    const { dir, store } = newRun();
    store.writeHarnessOutput("s0-p0-a0", { stdout: "events\n", stderr: "", stdoutTruncated: false, stderrTruncated: false });
    store.writeHarnessOutput("s0-p0-a0.t2", { stdout: "…tail", stderr: "boom\n", stdoutTruncated: true, stderrTruncated: false });
    store.close();
    const read = (name: string) => readFileSync(join(dir, "harness-output", name), "utf8");
    expect(read("s0-p0-a0.stdout")).toBe("events\n");
    expect(read("s0-p0-a0.stderr")).toBe("");
    expect(read("s0-p0-a0.t2.stdout")).toBe("[reins: earlier output dropped; the last 256 KiB follow]\n…tail");
    expect(read("s0-p0-a0.t2.stderr")).toBe("boom\n");
  });

  it("refuses a try id that is not a plain file name", () => {
    const { store } = newRun();
    const output = { stdout: "", stderr: "", stdoutTruncated: false, stderrTruncated: false };
    for (const id of ["../escape", "a/b", "", ".hidden"]) expect(() => store.writeHarnessOutput(id, output)).toThrow(/unsafe try id/);
    store.close();
  });
});
