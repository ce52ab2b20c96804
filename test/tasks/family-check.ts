/**
 * Self-check of a task family: every task's reference solution scores 1.0, and every listed
 * mistake scores below 1.0 (and does not pass), on real rendered workspaces with the real
 * verifier. The rubric judge is scripted (every item 1.0), so a mistake must be caught by code.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { loadAndResolve } from "../../src/compiler/index.js";
import type { ResolvedTask } from "../../src/compiler/contract/plan.js";
import { DirectoryReader } from "../../src/runtime/verifiers/directory-reader.js";
import { writeResolvedFiles } from "../../src/runtime/verifiers/hidden.js";
import { judgeFromFunction, type Judge } from "../../src/runtime/verifiers/judge.js";
import { runVerifier, type VerifierResult } from "../../src/runtime/verifiers/verify.js";

const run = promisify(execFile);

export function loadFamilyTasks(familyFile: string): { tasks: ResolvedTask[]; errors: string[] } {
  const r = loadAndResolve([familyFile]);
  const errors = r.diagnostics.filter((d) => d.severity === "error").map((d) => `${d.file}:${d.line}:${d.column} ${d.code}: ${d.message}`);
  return { tasks: [...r.value.world.tasks.values()].map((e) => e.value), errors };
}

/** A judge that gives every rubric item of `task` the same score. */
export function constantJudge(task: ResolvedTask, score = 1): Judge {
  const answer = JSON.stringify(Object.fromEntries((task.verifier.rubric?.items ?? []).map((i) => [i.id, score])));
  return judgeFromFunction(async () => answer, "scripted");
}

export async function listMistakes(solution: string): Promise<string[]> {
  const { stdout } = await run(process.execPath, [solution, "--mistakes"]);
  return Object.keys(JSON.parse(stdout) as Record<string, string>);
}

/** Materializes the task's workspace, applies the solution (or a mistake), verifies it. */
export async function solveAndVerify(task: ResolvedTask, solution: string, mistake?: string): Promise<VerifierResult> {
  const ws = await mkdtemp(join(tmpdir(), `reins-family-${task.name}-`));
  try {
    await writeResolvedFiles(ws, task.files);
    await run(process.execPath, [solution, ws, ...(mistake ? ["--mistake", mistake] : [])], { cwd: dirname(solution), timeout: 60_000 });
    return await runVerifier(task.verifier, {
      reader: new DirectoryReader(ws),
      instruction: task.instruction,
      hiddenFiles: task.hiddenFiles,
      judge: constantJudge(task),
      rollout: task.name,
    });
  } finally {
    await rm(ws, { recursive: true, force: true });
  }
}

/** One line per failing part, for assertion messages. */
export function explain(r: VerifierResult): string {
  const lines = [`reward=${r.reward} status=${r.status}${r.error ? ` error=${r.error.code}: ${r.error.message}` : ""}`];
  for (const c of r.parts.checks?.results ?? []) if (!c.pass) lines.push(`  ✗ ${c.name}: ${c.reason}`);
  if (r.parts.script) lines.push(`  script ${r.parts.script.score} ${JSON.stringify(r.parts.script.subscores)}`);
  return lines.join("\n");
}

/** The test suite of one family directory (family.yaml + solution.mjs). */
export function describeFamily(familyPath: string): void {
  const dir = familyPath.endsWith(".yaml") ? dirname(familyPath) : familyPath;
  const file = join(dir, "family.yaml");
  const solution = join(dir, "solution.mjs");
  const { tasks, errors } = loadFamilyTasks(file);

  describe(`task family ${dir.split("/").pop()}`, () => {
    it("validates, starts with the schema modeline and expands to a handful of tasks", () => {
      expect(errors).toEqual([]);
      expect(readFileSync(file, "utf8").split("\n")[0]).toMatch(/^# yaml-language-server: \$schema=(\.\.\/)+schemas\/v1alpha1\/any\.schema\.json$/);
      expect(tasks.length).toBeGreaterThanOrEqual(2);
      expect(tasks.length).toBeLessThanOrEqual(6);
    });

    it.each(tasks.map((t) => [t.name, t] as const))("reference solution scores 1.0 on %s", async (_name, task) => {
      const r = await solveAndVerify(task, solution);
      expect(r.reward, explain(r)).toBe(1);
      expect(r.passed).toBe(true);
    });

    it("every mistake scores below 1.0 on every task, with a reason", async () => {
      const mistakes = await listMistakes(solution);
      expect(mistakes.length).toBeGreaterThanOrEqual(2);
      for (const task of tasks) {
        for (const mistake of mistakes) {
          const r = await solveAndVerify(task, solution, mistake);
          const why = `${task.name} --mistake ${mistake}\n${explain(r)}`;
          expect(r.status, why).toBe("ok");
          expect(r.reward!, why).toBeLessThan(1);
          expect(r.passed, why).toBe(false);
          const reasons = [...(r.parts.checks?.results ?? []).filter((c) => !c.pass), ...(r.parts.script && r.parts.script.score < 1 ? [r.parts.script] : [])];
          expect(reasons.length, why).toBeGreaterThan(0);
        }
      }
    });
  });
}
