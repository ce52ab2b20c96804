/** Input files: call records and rewards; mistakes become located diagnostics. (The Algorithm file: test/compiler/algorithm-file.test.ts.) */
import { describe, expect, it } from "vitest";
import { parseCallRecords } from "../../src/runtime/records/index.js";
import { parseRewards } from "../../src/runtime/trajectories/rewards.js";
import { RolloutBuilder, seededRng } from "./synthetic.js";

function goodLines(): string[] {
  const b = new RolloutBuilder("r1", seededRng(1));
  b.call(b.tokens(5), b.tokens(3));
  b.call(b.tokens(5), b.tokens(3));
  return b.records.map((r) => JSON.stringify(r));
}

const codes = (r: { diagnostics: { code: string; line: number }[] }) => r.diagnostics.map((d) => [d.code, d.line]);

describe("parseCallRecords", () => {
  it("parses proxy records and skips blank lines", () => {
    const r = parseCallRecords(`${goodLines().join("\n\n")}\n`, "calls.jsonl");
    expect(r.diagnostics).toEqual([]);
    expect(r.value.map((x) => x.seq)).toEqual([0, 1]);
  });

  it("names the line of every broken record", () => {
    const [a, b] = goodLines();
    const obj = JSON.parse(a);
    const lines = [
      a,
      "{not json",
      JSON.stringify({ ...obj, seq: 5, promptIds: [1, -2] }),
      JSON.stringify({ ...obj, seq: 6, completionLogprobs: [] }),
      JSON.stringify((({ rolloutId, ...rest }) => rest)({ ...obj, seq: 7 })),
      JSON.stringify({ ...obj, seq: 8, callClass: "helper" }),
      b.replace('"seq":1', '"seq":0'),
      "[1,2]",
      JSON.stringify({ ...obj, seq: 9, v: 3 }),
    ];
    const r = parseCallRecords(lines.join("\n"), "calls.jsonl");
    expect(codes(r)).toEqual([
      ["CallRecordNotJson", 2],
      ["CallRecordInvalidField", 3],
      ["CallRecordLogprobMismatch", 4],
      ["CallRecordMissingField", 5],
      ["CallRecordInvalidField", 6],
      ["CallRecordDuplicateSeq", 7],
      ["CallRecordNotObject", 8],
      ["CallRecordVersion", 9],
    ]);
    expect(r.diagnostics[1].message).toContain("promptIds[1]");
    expect(r.diagnostics.every((d) => d.file === "calls.jsonl" && d.hint.length > 0)).toBe(true);
  });

  it("warns on an empty file", () => {
    const r = parseCallRecords("\n", "empty.jsonl");
    expect(r.diagnostics.map((d) => [d.code, d.severity])).toEqual([["CallRecordsEmpty", "warning"]]);
  });
});

describe("parseRewards", () => {
  it("reads rollout -> {reward, task, harness[, step]}", () => {
    const r = parseRewards(
      '{"r1": {"reward": 0.5, "task": "t", "harness": "h", "details": {}}, "r2": {"reward": 1, "task": "t", "harness": "h", "step": 2}}',
      "rw.json",
    );
    expect(r.diagnostics).toEqual([]);
    expect([...r.value]).toEqual([
      ["r1", { reward: 0.5, task: "t", harness: "h" }],
      ["r2", { reward: 1, task: "t", harness: "h", step: 2 }],
    ]);
  });

  it("locates wrong fields and syntax errors", () => {
    const text = ["{", '  "r1": {"reward": "high", "task": "t", "harness": "h"},', '  "r2": {"task": "t", "harness": "h"},', '  "r3": 4', "}"].join("\n");
    expect(codes(parseRewards(text, "rw.json"))).toEqual([
      ["RewardsInvalidField", 2],
      ["RewardsMissingField", 3],
      ["RewardsInvalidEntry", 4],
    ]);
    expect(parseRewards('{"r1": {', "rw.json").diagnostics[0].code).toBe("RewardsNotJson");
    expect(parseRewards("[1]", "rw.json").diagnostics[0].code).toBe("RewardsNotObject");
  });
});
