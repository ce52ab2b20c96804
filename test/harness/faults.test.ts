/**
 * Fault runs: real harnesses against the real proxy whose scripted model fails on purpose —
 * an engine error (the proxy answers 5xx), a stream cut in the middle of a tool call, and tool-call
 * arguments that are not JSON. The harness must recover, the proxy must keep serving, and the
 * records must say what happened. All records are written to test-output/harness/fault-records.jsonl
 * for tests that need such trees (dead leaves, continuations).
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScriptedTurn } from "../../src/compiler/contract/plan.js";
import type { CallRecord } from "../../src/runtime/records/call-record.js";
import { commonPrefixLength } from "./prefix.js";
import { writeSummary } from "./real-harness.js";
import { OUTPUT_DIR, skipHarness, skipNote, describeRun, runScenario, scriptedModel, writeRecords, type ScenarioResult } from "./scenario.js";

type Fault = "engine-error" | "cut-stream" | "invalid-tool-json";

/** The example script's write turn and final turn, with the fault put in front. */
function faultScript(harness: string, fault: Fault): ScriptedTurn[] {
  const engine = scriptedModel(harness).engine;
  if (engine.type !== "scripted") throw new Error("examples/proxy must use the scripted engine");
  const [write, final] = engine.script;
  const first: ScriptedTurn =
    fault === "engine-error"
      ? { fault: "engine-error" }
      : fault === "cut-stream"
        ? { ...write, fault: "cut-stream" }
        : {
            ...write,
            // A comma between two arguments is missing, so the arguments are not JSON even though
            // the braces balance: {"path":"hello.txt" "content":"hi"}.
            toolCalls: write.toolCalls!.map((c) => ({ name: c.name, arguments: JSON.stringify(c.arguments).replace(/,"/, ' "') })),
          };
  return [first, write, final];
}

const allRecords: CallRecord[] = [];

function describeFaults(harness: "claude-code" | "reins-agent") {
  describe.skipIf(skipHarness(harness))(`${harness} recovers from model faults${skipNote(harness)}`, () => {
    const runs = {} as Record<Fault, ScenarioResult>;
    beforeAll(async () => {
      for (const fault of ["engine-error", "cut-stream", "invalid-tool-json"] as const) {
        runs[fault] = await runScenario({ harness, label: `${harness}-${fault}`, script: faultScript(harness, fault) });
        allRecords.push(...runs[fault].records);
        await writeSummary(runs[fault]);
      }
    }, 600_000);

    it("finishes every fault run with hello.txt containing hi, with no other host contacted", () => {
      for (const run of Object.values(runs)) {
        expect(run.exit.exitCode, describeRun(run)).toBe(0);
        expect(run.hello, describeRun(run)).toBe("hi");
        expect(run.egress).toEqual([]);
      }
    });

    it("engine error: the call is recorded as an engine error, and the harness's retry sends the same prompt", () => {
      const run = runs["engine-error"];
      const [failed, retry, final] = run.records;
      expect(
        run.records.map((r) => r.finishReason),
        describeRun(run),
      ).toEqual(["error", "tool_calls", "stop"]);
      expect(failed.error?.kind).toBe("engine");
      expect(failed.completionIds).toEqual([]);
      expect(retry.promptIds).toEqual(failed.promptIds);
      expect(final.error).toBeUndefined();
    });

    it("stream cut mid tool call: the call is recorded as cut, and the proxy serves the harness's next attempt", () => {
      const run = runs["cut-stream"];
      const [cut, ...rest] = run.records;
      expect(cut.finishReason, describeRun(run)).toBe("aborted");
      expect(cut.error?.message).toMatch(/stream cut/);
      expect(
        rest.map((r) => r.finishReason),
        describeRun(run),
      ).toEqual(["tool_calls", "stop"]);
      // The next attempt starts with the whole prompt of the cut call: either the same request again
      // (the partial answer dropped) or a continuation that keeps the finished part of it.
      const [next] = rest;
      expect(commonPrefixLength(cut.promptIds, next.promptIds)).toBe(cut.promptIds.length);
    });

    it("invalid tool JSON: the call is recorded as malformed, and the harness continues past it", () => {
      const run = runs["invalid-tool-json"];
      const [bad, ...rest] = run.records;
      expect(bad.parse, describeRun(run)).toMatchObject({ ok: false, error: "invalid-tool-json" });
      expect(
        rest.map((r) => r.finishReason),
        describeRun(run),
      ).toEqual(["tool_calls", "stop"]);
      // The malformed call goes back into the conversation with an error as its result (Claude Code
      // sends it as {"__unparsedToolInput": …}, reins-agent verbatim), and the proxy renders it from
      // the stored completion ids: the next prompt extends the bad call's prompt and completion.
      const [next] = rest;
      expect(commonPrefixLength([...bad.promptIds, ...bad.completionIds], next.promptIds)).toBe(bad.promptIds.length + bad.completionIds.length);
      expect(next.reused).toContain(bad.seq);
    });
  });
}

describeFaults("claude-code");
describeFaults("reins-agent");

afterAll(async () => {
  if (allRecords.length > 0) await writeRecords(path.join(OUTPUT_DIR, "fault-records.jsonl"), allRecords);
});
