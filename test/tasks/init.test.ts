/** `reins init family|experiment`: scaffolds that validate and pass their own checks; never overwrite. */
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { compilePlan, validateSpecs } from "../../src/compiler/index.js";
import { loadFamilyTasks } from "./family-check.js";

const run = promisify(execFile);
const CLI = resolve(import.meta.dirname, "init-cli.mjs");
const REINS_ROOT = resolve(import.meta.dirname, "../..");

async function reins(cwd: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, NODE_OPTIONS: "" } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

const dirs: string[] = [];
async function project(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "reins-init-"));
  dirs.push(d);
  await writeFile(join(d, "package.json"), '{"name": "my-tasks", "private": true}\n');
  return d;
}
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe("reins init family", () => {
  it("creates a family, a solution with mistakes, a README and a test that passes under node --test", async () => {
    const cwd = await project();
    const r = await reins(cwd, "init", "family", "word-stats", "--dir", "tasks", "--category", "analysis-reasoning", "--json");
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ ok: true, kind: "family", name: "word-stats" });
    expect(out.created).toEqual([
      "tasks/word-stats/family.yaml",
      "tasks/word-stats/solution.mjs",
      "tasks/word-stats/README.md",
      "test/tasks/word-stats.test.mjs",
    ]);
    expect(out.next).toContain("node --test test/tasks/word-stats.test.mjs");

    const familyFile = join(cwd, "tasks/word-stats/family.yaml");
    const modeline = readFileSync(familyFile, "utf8").split("\n")[0];
    expect(modeline.startsWith("# yaml-language-server: $schema=")).toBe(true);
    expect(resolve(dirname(familyFile), modeline.split("$schema=")[1])).toBe(join(REINS_ROOT, "schemas/v1alpha1/any.schema.json"));

    // reins is not installed in this project: the generated test imports the running reins's
    // public testing module by path, and points at the family.
    const testFile = join(cwd, "test/tasks/word-stats.test.mjs");
    const test = readFileSync(testFile, "utf8");
    expect(resolve(dirname(testFile), /from "([^"]+)"/.exec(test)![1])).toBe(join(REINS_ROOT, "src/testing/entry.mjs"));
    expect(resolve(dirname(testFile), /new URL\("([^"]+)"/.exec(test)![1])).toBe(familyFile);

    const { tasks, errors } = loadFamilyTasks(familyFile);
    expect(errors).toEqual([]);
    expect(tasks.map((t) => t.category)).toEqual(["analysis-reasoning", "analysis-reasoning"]);

    // The generated test runs as the user would run it, and passes: one test per check.
    const t = await run(process.execPath, ["--test", "--test-reporter=tap", "test/tasks/word-stats.test.mjs"], {
      cwd,
      env: { ...process.env, NODE_OPTIONS: "" },
    });
    expect(t.stdout).toMatch(/# pass 4\n/);
    expect(t.stdout).toMatch(/# fail 0\n/);
    expect(t.stdout).toContain("every mistake, and the exits-early hack, scores below 1.0 on every task, with a reason");
  });

  it("the generated test fails when a mistake scores 1.0", async () => {
    const cwd = await project();
    expect((await reins(cwd, "init", "family", "lenient")).code).toBe(0);
    const familyFile = join(cwd, "lenient/family.yaml");
    // Drop the checks that catch the mistakes: only the file's existence is verified.
    const text = readFileSync(familyFile, "utf8").replace(
      / {8}- jsonValid: out\/stats\.json\n {8}- jsonEquals: \{path: out\/stats\.json, hiddenFile: expected\/stats\.json\}\n {10}weight: 2\n/,
      "",
    );
    expect(text).not.toContain("jsonEquals");
    await writeFile(familyFile, text);
    const t = await run(process.execPath, ["--test", "--test-reporter=tap", "test/tasks/lenient.test.mjs"], {
      cwd,
      env: { ...process.env, NODE_OPTIONS: "" },
    }).then(
      () => ({ code: 0, stdout: "" }),
      (e: { code: number; stdout: string }) => e,
    );
    expect(t.code).toBe(1);
    expect(t.stdout).toMatch(/# fail 1\n/);
    expect(t.stdout).toContain("the mistake scores 1.0");
  });

  it("refuses to overwrite anything, and says so", async () => {
    const cwd = await project();
    expect((await reins(cwd, "init", "family", "dup")).code).toBe(0);
    await writeFile(join(cwd, "dup/family.yaml"), "# edited by hand\n");
    const r = await reins(cwd, "init", "family", "dup");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "error[FileExists]: dup/family.yaml, dup/solution.mjs, dup/README.md, test/tasks/dup.test.mjs already exist; reins init never overwrites files.",
    );
    expect(r.stderr).toContain("hint: Choose another name or --dir");
    expect(readFileSync(join(cwd, "dup/family.yaml"), "utf8")).toBe("# edited by hand\n");
  });

  it("writes nothing when only one of the files exists", async () => {
    const cwd = await project();
    await import("node:fs/promises").then((fs) => fs.mkdir(join(cwd, "test/tasks"), { recursive: true }));
    await writeFile(join(cwd, "test/tasks/solo.test.mjs"), "// mine\n");
    const r = await reins(cwd, "init", "family", "solo", "--json");
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.ok).toBe(false);
    expect(out.problems).toMatchObject([{ code: "FileExists", message: "test/tasks/solo.test.mjs already exists; reins init never overwrites files." }]);
    expect(existsSync(join(cwd, "solo"))).toBe(false);
  });

  it("rejects a bad name (exit 1) and a missing one (exit 2)", async () => {
    const cwd = await project();
    const bad = await reins(cwd, "init", "family", "Bad_Name");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('error[InvalidName]: "Bad_Name" is not a valid family name.');
    expect((await reins(cwd, "init", "family")).code).toBe(2);
  });
});

describe("reins init experiment", () => {
  it("creates an Experiment and an Evaluation over the starter library that validate and plan", async () => {
    const cwd = await project();
    const r = await reins(cwd, "init", "experiment", "first-run", "--json");
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).created).toEqual(["first-run/experiment.yaml", "first-run/evaluation.yaml"]);
    for (const f of ["experiment.yaml", "evaluation.yaml"]) {
      const text = readFileSync(join(cwd, "first-run", f), "utf8");
      expect(text.split("\n")[0]).toMatch(/^# yaml-language-server: \$schema=(\.\.\/)+.*schemas\/v1alpha1\/any\.schema\.json$/);
      const v = validateSpecs([join(cwd, "first-run", f)]);
      expect(v.diagnostics.filter((d) => d.severity === "error").map((d) => `${d.code}: ${d.message}`)).toEqual([]);
      expect(v.value.world.tasks.size).toBeGreaterThanOrEqual(12);
      // The next step it prints, `reins plan FILE`, has one target (the starter library's own
      // Evaluation is not imported).
      const p = compilePlan([join(cwd, "first-run", f)]);
      expect(p.diagnostics.filter((d) => d.severity === "error").map((d) => `${d.code}: ${d.message}`)).toEqual([]);
      expect(p.value?.name).toBe(f === "experiment.yaml" ? "first-run" : "first-run-eval");
    }
  });

  it("a --tasks directory that does not exist is an error", async () => {
    const cwd = await project();
    const r = await reins(cwd, "init", "experiment", "x", "--tasks", "nope");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[TasksDirNotFound]: The tasks directory nope does not exist.");
  });
});
