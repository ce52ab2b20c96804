/**
 * Evaluation of the starter library end to end, without a model: solve.mjs plays the agent,
 * applying each family's reference solution or one of its mistakes (it says which). The verifier
 * scores every attempt; pass@k and pass^k from the summary must equal the estimators applied to
 * what was actually submitted.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { passAtK, passHatK } from "../../src/runtime/eval/pass-at-k.js";
import { outcomeOf, summarizeEval, type RolloutOutcome } from "../../src/runtime/eval/summary.js";
import { renderEvalTable } from "../../src/runtime/eval/table.js";
import { DirectoryReader } from "../../src/runtime/verifiers/directory-reader.js";
import { writeResolvedFiles } from "../../src/runtime/verifiers/hidden.js";
import { runVerifier } from "../../src/runtime/verifiers/verify.js";
import { constantJudge, loadFamilyTasks } from "../tasks/family-check.js";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../../examples/tasks");
const ATTEMPTS = 3;

it("pass@k and pass^k over the starter library match what the stand-in agent submitted", async () => {
  const families = readdirSync(ROOT)
    .filter((f) => existsSync(join(ROOT, f, "family.yaml")))
    .sort();
  const outcomes: RolloutOutcome[] = [];
  const submittedCorrect = new Map<string, number>();
  for (const fam of families) {
    // One task per family keeps the run short.
    for (const task of loadFamilyTasks(join(ROOT, fam, "family.yaml")).tasks.slice(0, 1)) {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const ws = await mkdtemp(join(tmpdir(), "reins-eval-"));
        try {
          await writeResolvedFiles(ws, task.files);
          const { stdout } = await run(process.execPath, [join(ROOT, "solve.mjs"), ws, task.instruction], {
            env: { ...process.env, SOLVE_ATTEMPT: String(attempt) },
          });
          if (stdout.includes("reference solution")) submittedCorrect.set(task.name, (submittedCorrect.get(task.name) ?? 0) + 1);
          const result = await runVerifier(task.verifier, {
            reader: new DirectoryReader(ws),
            instruction: task.instruction,
            hiddenFiles: task.hiddenFiles,
            judge: constantJudge(task),
          });
          outcomes.push(outcomeOf({ task: task.name, category: task.category, harness: "solve.mjs", attempt }, result));
        } finally {
          await rm(ws, { recursive: true, force: true });
        }
      }
    }
  }

  const s = summarizeEval(outcomes, { ks: [1, 3] });
  expect(s.rollouts).toBe(families.length * ATTEMPTS);
  expect(s.errors).toBe(0);
  // Every submission was scored as what it was: references pass, mistakes fail.
  for (const [task, m] of Object.entries(s.tasks)) {
    const c = submittedCorrect.get(task) ?? 0;
    expect(m.passAt["1"], task).toBeCloseTo(passAtK(ATTEMPTS, c, 1)!, 12);
    expect(m.passAt["3"], task).toBeCloseTo(passAtK(ATTEMPTS, c, 3)!, 12);
    expect(m.passHat["3"], task).toBeCloseTo(passHatK(ATTEMPTS, c, 3)!, 12);
  }
  const tasks = Object.keys(s.tasks);
  const mean = (f: (c: number) => number) => tasks.reduce((a, t) => a + f(submittedCorrect.get(t) ?? 0), 0) / tasks.length;
  expect(s.passAt["1"]).toBeCloseTo(
    mean((c) => passAtK(ATTEMPTS, c, 1)!),
    12,
  );
  expect(s.passHat["3"]).toBeCloseTo(
    mean((c) => passHatK(ATTEMPTS, c, 3)!),
    12,
  );
  // The stand-in agent mixes outcomes, so the table has something to show.
  expect(s.passAt["3"]).toBeGreaterThan(s.passHat["3"]);
  expect(Object.keys(s.categories)).toHaveLength(6);
  expect(s.topFailures.length).toBeGreaterThan(0);
  const table = renderEvalTable(s);
  expect(table.split("\n")[0]).toMatch(/rollouts\s+errors\s+mean reward\s+pass@1\s+pass@3\s+pass\^3$/);
  expect(table).toContain("Most common failures");
});
