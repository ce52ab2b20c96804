import { describe, expect, it } from "vitest";
import { combineScores } from "../../src/runtime/verifiers/combine.js";

const w = (weights: Record<string, number> = {}, mode: "weighted" | "all" | "min" | "any" = "weighted") => ({ mode, weights });

describe("combineScores", () => {
  it("weighted: equal weights by default, given weights normalized over present parts", () => {
    expect(combineScores({ checks: 1, rubric: 0.5 }, w(), 1).reward).toBeCloseTo(0.75, 12);
    expect(combineScores({ checks: 1, rubric: 0.5 }, w({ checks: 0.7, rubric: 0.3 }), 1)).toEqual({ reward: 0.85, weights: { checks: 0.7, rubric: 0.3 } });
    expect(combineScores({ checks: 1, rubric: 1 }, w({ checks: 0.7, rubric: 0.3 }), 1).reward).toBe(1);
    expect(combineScores({ checks: 0.5 }, w({ checks: 0.7, rubric: 0.3 }), 1).reward).toBe(0.5);
  });
  it("weighted: `code` stands for checks and script together", () => {
    const r = combineScores({ checks: 1, script: 0, rubric: 1 }, w({ code: 0.7, rubric: 0.3 }), 1);
    expect(r.weights).toEqual({ checks: 0.35, script: 0.35, rubric: 0.3 });
    expect(r.reward).toBeCloseTo(0.65, 12);
  });
  it("all / any use the pass threshold; min takes the lowest part", () => {
    expect(combineScores({ checks: 1, rubric: 0.8 }, w({}, "all"), 0.8).reward).toBe(1);
    expect(combineScores({ checks: 1, rubric: 0.7 }, w({}, "all"), 0.8).reward).toBe(0);
    expect(combineScores({ checks: 0.2, rubric: 0.9 }, w({}, "any"), 0.8).reward).toBe(1);
    expect(combineScores({ checks: 0.2, rubric: 0.7 }, w({}, "any"), 0.8).reward).toBe(0);
    expect(combineScores({ checks: 0.2, rubric: 0.7 }, w({}, "min"), 0.8).reward).toBe(0.2);
  });
});
