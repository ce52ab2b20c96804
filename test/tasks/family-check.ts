/**
 * The family self-check of reins/testing (src/testing/family.ts), registered with vitest for the
 * starter library: the same checks a user's `node --test` runs, plus the library's own bounds
 * (a handful of tasks, at least two mistakes per family).
 */
import { describe, it } from "vitest";
import { familyChecks } from "../../src/testing/index.js";

export { constantJudge, explain, listMistakes, loadFamilyTasks, solveAndVerify } from "../../src/testing/index.js";

/** The test suite of one family directory (family.yaml + solution.mjs). */
export function describeFamily(familyPath: string): void {
  const { family, checks } = familyChecks(familyPath, { minTasks: 2, maxTasks: 6, minMistakes: 2 });
  describe(`task family ${family}`, () => {
    for (const check of checks) it(check.name, () => check.run());
  });
}
