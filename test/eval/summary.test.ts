import { describe, expect, it } from "vitest";
import { outcomeOf, summarizeEval, type RolloutOutcome } from "../../src/runtime/eval/summary.js";
import { renderEvalTable } from "../../src/runtime/eval/table.js";
import type { VerifierResult } from "../../src/runtime/verifiers/verify.js";
import { outcomeOfResult } from "../../src/runtime/executor/outcomes.js";
import type { RolloutResult } from "../../src/runtime/records/rollout-result.js";

function runs(task: string, category: string, harness: string, rewards: (number | null)[], threshold = 1): RolloutOutcome[] {
  return rewards.map((reward, attempt) => ({
    task,
    category,
    harness,
    attempt,
    reward,
    passed: reward !== null && reward >= threshold,
    ...(reward === null ? { error: { code: "ScriptTimeout", message: "the verifier script ran longer than 5 s" } } : {}),
    failures: reward !== null && reward < threshold ? [{ name: `numeric ${task}/out.json`, type: "numeric", reason: `off by one in ${task}` }] : [],
  }));
}

const outcomes = [
  ...runs("a", "analysis", "reins-agent", [1, 1, 0]),
  ...runs("b", "analysis", "reins-agent", [0, 0.5, 0]),
  ...runs("c", "productivity", "reins-agent", [1, 1, 1]),
  ...runs("a", "analysis", "codex", [1, null, 0.7]),
];

describe("summarizeEval", () => {
  const s = summarizeEval(outcomes);

  it("averages pass@k over (task, harness) groups; errors count in no estimate", () => {
    expect(s.ks).toEqual([1, 3]);
    expect(s.rollouts).toBe(12);
    expect(s.errors).toBe(1);
    expect(s.groups).toBe(4);
    expect(s.meanReward).toBeCloseTo((2 + 0.5 + 3 + 1.7) / 11, 12);
    // pass@1 per group: a/agent 2/3, b 0, c 1, a/codex 1/2.
    expect(s.passAt["1"]).toBeCloseTo((2 / 3 + 0 + 1 + 0.5) / 4, 12);
    // pass@3 only where 3 attempts were scored: a/agent 1, b 0, c 1.
    expect(s.passAt["3"]).toBeCloseTo(2 / 3, 12);
    expect(s.passHat["3"]).toBeCloseTo(1 / 3, 12);
  });

  it("breaks down by category, harness and task", () => {
    expect(Object.keys(s.categories)).toEqual(["analysis", "productivity"]);
    expect(s.categories.productivity).toMatchObject({ rollouts: 3, groups: 1, meanReward: 1, passAt: { "1": 1, "3": 1 }, passHat: { "1": 1, "3": 1 } });
    expect(s.harnesses.codex).toMatchObject({ rollouts: 3, errors: 1, groups: 1, passAt: { "1": 0.5 } });
    expect(s.harnesses.codex.passAt["3"]).toBeUndefined();
    expect(s.tasks.a.category).toBe("analysis");
    expect(s.tasks.a.passAt["1"]).toBeCloseTo((2 / 3 + 0.5) / 2, 12);
  });

  it("lists the most common failures and the rollouts without a reward", () => {
    expect(s.topFailures[0]).toEqual({ name: "numeric b/out.json", type: "numeric", count: 3, tasks: 1, examples: ["off by one in b"] });
    expect(s.topFailures.reduce((n, f) => n + f.count, 0)).toBe(5);
    expect(s.verifierErrors).toEqual([{ code: "ScriptTimeout", count: 1, example: "the verifier script ran longer than 5 s" }]);
  });

  it("explicit ks", () => {
    expect(summarizeEval(outcomes, { ks: [2, 1, 2] }).ks).toEqual([1, 2]);
  });

  it("renders a table", () => {
    const t = renderEvalTable(summarizeEval(runs("x", "cat", "h", [1, 0]).concat(runs("y", "cat", "h", [0.5, null]))));
    expect(t).toBe(
      [
        "              rollouts  errors  mean reward  pass@1  pass@2  pass^2",
        "────────────  ────────  ──────  ───────────  ──────  ──────  ──────",
        "all                  4       1        0.500   0.250   1.000   0.000",
        "",
        "category cat         4       1        0.500   0.250   1.000   0.000",
        "",
        "harness h            4       1        0.500   0.250   1.000   0.000",
        "",
        "task x               2       0        0.500   0.500   1.000   0.000",
        "task y               2       1        0.500   0.000       —       —",
        "",
        "Most common failures",
        "     1×  numeric x/out.json  (1 task)",
        "         off by one in x",
        "     1×  numeric y/out.json  (1 task)",
        "         off by one in y",
        "",
        "Rollouts without a reward (not counted in the estimates)",
        "     1×  ScriptTimeout (verifier): the verifier script ran longer than 5 s",
        "",
      ].join("\n"),
    );
  });

  it("lists a rollout whose sandbox or harness failed apart from verifier errors", () => {
    const base = { task: "t", category: "c", harness: "h", attempt: 0, rollout: "r", phases: {}, calls: 0 } as unknown as RolloutResult;
    const infra = outcomeOfResult({
      ...base,
      status: "infra-failed",
      reward: null,
      passed: false,
      error: { code: "SandboxFailed", message: "bwrap exited 1" },
    });
    const verifier = outcomeOfResult({ ...base, status: "verifier-error", reward: null, passed: false, error: { code: "ScriptTimeout", message: "slow" } });
    const s = summarizeEval([infra, verifier, infra]);
    expect(s.infraErrors).toEqual([{ code: "SandboxFailed", count: 2, example: "bwrap exited 1" }]);
    expect(s.verifierErrors).toEqual([{ code: "ScriptTimeout", count: 1, example: "slow" }]);
    expect(renderEvalTable(s)).toContain("     2×  SandboxFailed (infrastructure): bwrap exited 1");
  });
});

describe("outcomeOf", () => {
  it("collects failing checks, a partial script and rubric items below 1", () => {
    const result: VerifierResult = {
      status: "ok",
      reward: 0.6,
      passed: false,
      passThreshold: 1,
      weights: {},
      durationMs: 3,
      parts: {
        checks: {
          score: 0.5,
          passed: 1,
          total: 2,
          results: [
            { type: "fileExists", name: "fileExists a", weight: 1, pass: true, score: 1, reason: "a exists." },
            { type: "jsonValid", name: "jsonValid b.json", weight: 1, pass: false, score: 0, reason: "b.json is not valid JSON." },
          ],
        },
        script: { score: 0.5, subscores: {}, exitCode: 0, durationMs: 1, stderrTail: "" },
        rubric: { score: 0.8, judge: "j", calls: [], items: [{ id: "clarity", criterion: "clear", weight: 1, score: 0.8 }] },
      },
    };
    expect(outcomeOf({ task: "t", category: "c", harness: "h" }, result).failures).toEqual([
      { name: "jsonValid b.json", type: "jsonValid", reason: "b.json is not valid JSON." },
      { name: "script", type: "script", reason: "the script's reward is 0.5." },
      { name: "rubric clarity", type: "rubric", reason: 'the judge scored "clear" 0.8.' },
    ]);
  });
});
