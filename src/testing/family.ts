/**
 * Self-check of a task family (family.yaml + solution.mjs): it validates, its YAML starts with a
 * schema modeline that points at a schema file, every task's reference solution scores 1.0, and
 * every listed mistake — and the reference with every program it wrote ending early with status 0
 * (EXITS_EARLY) — scores below 1.0 (and does not pass) with a reason, on real rendered
 * workspaces with the real verifier. The rubric judge is constant (every item 1.0), so a mistake
 * must be caught by code. Runner-agnostic: each check throws an AssertionError when it fails.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import assert from "node:assert/strict";
import { loadAndResolve, type ResolvedTask } from "../compiler/index.js";
import { DirectoryReader, exitEarly, judgeFromFunction, runVerifier, writeResolvedFiles, type Judge, type VerifierResult } from "../runtime/index.js";

const run = promisify(execFile);

export type { ResolvedTask, VerifierResult };

/** A family directory, its family.yaml, or a file: URL of either. */
export type FamilyLocation = string | URL;

export interface FamilyPaths {
  dir: string;
  file: string;
  solution: string;
}

export function familyPaths(location: FamilyLocation): FamilyPaths {
  const p = location instanceof URL || location.startsWith("file:") ? fileURLToPath(location) : resolve(location);
  const dir = /\.ya?ml$/.test(p) ? dirname(p) : p;
  const file = /\.ya?ml$/.test(p) ? p : join(dir, "family.yaml");
  return { dir, file, solution: join(dir, "solution.mjs") };
}

/** The family's tasks, rendered, and its errors as `file:line:column Code: message` lines. */
export function loadFamilyTasks(familyFile: string): { tasks: ResolvedTask[]; errors: string[] } {
  const r = loadAndResolve([familyFile]);
  const errors = r.diagnostics.filter((d) => d.severity === "error").map((d) => `${d.file}:${d.line}:${d.column} ${d.code}: ${d.message}`);
  return { tasks: [...r.value.world.tasks.values()].map((e) => e.value), errors };
}

/** A judge that gives every rubric item of `task` the same score. */
export function constantJudge(task: ResolvedTask, score = 1): Judge {
  const answer = JSON.stringify(Object.fromEntries((task.verifier.rubric?.items ?? []).map((i) => [i.id, score])));
  return judgeFromFunction(async () => answer, "constant");
}

/** The mistakes a solution script lists (`node solution.mjs --mistakes`). */
export async function listMistakes(solution: string): Promise<string[]> {
  const { stdout } = await run(process.execPath, [solution, "--mistakes"]);
  return Object.keys(JSON.parse(stdout) as Record<string, string>);
}

/**
 * The hack every family is tested against besides its own mistakes: the reference solution, with
 * every program it wrote or changed ending at its first line with status 0. A verifier that trusts
 * a test command's exit status passes it without a fix, and an agent learns that in a few steps.
 */
export const EXITS_EARLY = "exits-early";

/** The workspace's regular files and their text, by relative path (node_modules and .git left out). */
function filesOf(ws: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(ws, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    const rel = path.slice(ws.length + 1);
    if (/(^|\/)(node_modules|\.git)\//.test(rel)) continue;
    out.set(rel, readFileSync(path, "utf8"));
  }
  return out;
}

/** Ends every program the solution wrote or changed at its first line (exitEarly); the paths it changed. */
function endProgramsEarly(ws: string, before: Map<string, string>): string[] {
  const changed: string[] = [];
  for (const [rel, text] of filesOf(ws)) {
    if (before.get(rel) === text) continue;
    const early = exitEarly(rel, text);
    if (early === undefined) continue;
    writeFileSync(join(ws, rel), early);
    changed.push(rel);
  }
  return changed;
}

/**
 * Materializes the task's workspace in a temporary directory, applies the solution (or a mistake,
 * or the reference with the EXITS_EARLY hack), verifies it. `programs` lists what the hack changed.
 */
export async function solveAndVerify(task: ResolvedTask, solution: string, mistake?: string): Promise<VerifierResult & { programs?: string[] }> {
  const ws = await mkdtemp(join(tmpdir(), `reins-family-${task.name}-`));
  try {
    await writeResolvedFiles(ws, task.files);
    const hack = mistake === EXITS_EARLY;
    const before = hack ? filesOf(ws) : undefined;
    await run(process.execPath, [solution, ws, ...(mistake && !hack ? ["--mistake", mistake] : [])], { cwd: dirname(solution), timeout: 60_000 });
    const programs = before ? endProgramsEarly(ws, before) : undefined;
    const r = await runVerifier(task.verifier, {
      reader: new DirectoryReader(ws),
      instruction: task.instruction,
      hiddenFiles: task.hiddenFiles,
      judge: constantJudge(task),
      rollout: task.name,
    });
    return programs ? { ...r, programs } : r;
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

const MODELINE = /^# yaml-language-server: \$schema=(\S+)$/;

/** The schema a YAML file's first-line modeline points at (absolute), or undefined without one. */
export function modelineSchema(yamlFile: string): string | undefined {
  const m = MODELINE.exec(readFileSync(yamlFile, "utf8").split("\n")[0] ?? "");
  if (!m) return undefined;
  const target = m[1]!;
  return /^[a-z]+:\/\//.test(target) ? target : resolve(dirname(yamlFile), target);
}

export interface FamilyCheckOptions {
  /** Fewest tasks the family must expand to (default 1). */
  minTasks?: number;
  /** Most tasks (default: no limit). */
  maxTasks?: number;
  /** Fewest mistakes solution.mjs must list (default 1). */
  minMistakes?: number;
}

export interface FamilyCheck {
  name: string;
  /** Resolves when the check holds; rejects with an AssertionError that says why otherwise. */
  run(): Promise<void>;
}

/** The checks of one family: validity and modeline, the reference on every task, every mistake on every task. */
export function familyChecks(location: FamilyLocation, opts: FamilyCheckOptions = {}): { family: string; checks: FamilyCheck[] } {
  const { dir, file, solution } = familyPaths(location);
  const { tasks, errors } = loadFamilyTasks(file);
  const min = opts.minTasks ?? 1;
  const checks: FamilyCheck[] = [
    {
      name: "validates, starts with the schema modeline and expands into tasks",
      run: async () => {
        assert.deepEqual(errors, [], `${file} has errors`);
        const schema = modelineSchema(file);
        assert.ok(schema, `${file} does not start with "# yaml-language-server: $schema=…/schemas/v1alpha1/any.schema.json"`);
        assert.match(schema, /schemas\/v1alpha1\/any\.schema\.json$/, `the modeline of ${file} names another schema`);
        assert.ok(schema.includes("://") || existsSync(schema), `the modeline of ${file} points at ${schema}, which does not exist`);
        assert.ok(tasks.length >= min, `${file} expands into ${tasks.length} task(s); at least ${min} expected`);
        if (opts.maxTasks !== undefined)
          assert.ok(tasks.length <= opts.maxTasks, `${file} expands into ${tasks.length} tasks; at most ${opts.maxTasks} expected`);
      },
    },
    ...tasks.map((task) => ({
      name: `reference solution scores 1.0 on ${task.name}`,
      run: async () => {
        const r = await solveAndVerify(task, solution);
        assert.equal(r.reward, 1, explain(r));
        assert.equal(r.passed, true, explain(r));
      },
    })),
    {
      name: "every mistake, and the exits-early hack, scores below 1.0 on every task, with a reason",
      run: async () => {
        const mistakes = await listMistakes(solution);
        assert.ok(mistakes.length >= (opts.minMistakes ?? 1), `${solution} lists ${mistakes.length} mistake(s); at least ${opts.minMistakes ?? 1} expected`);
        for (const task of tasks) {
          for (const mistake of [...mistakes, EXITS_EARLY]) {
            const r = await solveAndVerify(task, solution, mistake);
            if (r.programs?.length === 0) continue; // the solution writes no program: nothing to end early
            const why = `${task.name} --mistake ${mistake}${r.programs ? ` (${r.programs.join(", ")} ending with status 0 at its first line)` : ""}\n${explain(r)}`;
            assert.equal(r.status, "ok", why);
            assert.ok(r.reward !== null && r.reward < 1, `the mistake scores 1.0: ${why}`);
            assert.equal(r.passed, false, why);
            const reasons = [
              ...(r.parts.checks?.results ?? []).filter((c) => !c.pass),
              ...(r.parts.script && r.parts.script.score < 1 ? [r.parts.script] : []),
            ];
            assert.ok(reasons.length > 0, `no check or script says why: ${why}`);
          }
        }
      },
    },
  ];
  return { family: basename(dir), checks };
}
