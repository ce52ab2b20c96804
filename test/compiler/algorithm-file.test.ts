/**
 * An Algorithm document on its own (`reins trajectories --algorithm FILE`) goes through the
 * compiler: the same schema, defaults and checks as an Experiment's, diagnostics in the file.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runTrajectories } from "../../src/cli/commands/trajectories.js";
import { compilePlan, defaultAlgorithm, loadAlgorithm, loadAndResolve } from "../../src/compiler/index.js";
import { RolloutBuilder, seededRng } from "../trajectories/synthetic.js";
import { tempDir } from "../temp.js";

function write(text: string, name = "algo.yaml"): { dir: string; file: string } {
  const dir = tempDir("reins-algo-");
  writeFileSync(join(dir, name), text);
  return { dir, file: join(dir, name) };
}

const codes = (ds: { code: string; line: number; severity: string }[]) => ds.filter((d) => d.severity === "error").map((d) => [d.code, d.line]);

describe("loadAlgorithm", () => {
  it("fills the compiler's defaults around what the spec sets; other kinds in the file are checked and ignored", () => {
    const { file } = write(
      [
        "apiVersion: reins/v1alpha1",
        "kind: Harness",
        "metadata: {name: x}",
        "spec: {command: [x]}",
        "---",
        "apiVersion: reins/v1alpha1",
        "kind: Algorithm",
        "metadata: {name: mine}",
        "spec:",
        "  type: RLOO",
        "  advantage: {dropZeroVariance: true}",
        "  correction: {type: MIS, level: geometric}",
        "  filters:",
        "    dropClasses: [subagent]",
        "    maxBranches: 8",
      ].join("\n"),
    );
    const r = loadAlgorithm(file, { env: {} });
    expect(r.diagnostics).toEqual([]);
    const d = defaultAlgorithm();
    expect(r.value).toEqual({
      ...d,
      type: "RLOO",
      advantage: { ...d.advantage, dropZeroVariance: true },
      correction: { type: "MIS", level: "geometric", low: 0.5, high: 2 },
      filters: { dropDeadLeaves: true, dropClasses: ["subagent"], maxBranches: 8 },
    });
  });

  it("reports mistakes with the file's own lines, codes and suggestions", () => {
    const { file } = write(
      [
        "apiVersion: reins/v1alpha1",
        "kind: Algorithm",
        "metadata: {name: bad}",
        "spec:",
        "  type: GRPO",
        "  groupSize: 1",
        "  filters:",
        "    dropDeadLeaf: false",
        "    dropClasses: [compacton]",
      ].join("\n"),
    );
    const r = loadAlgorithm(file, { env: {} });
    expect(r.value).toBeUndefined();
    expect(codes(r.diagnostics)).toEqual([
      ["UnknownField", 8],
      ["InvalidValue", 9],
    ]);
    expect(r.diagnostics[0]!.file).toBe(file);
    expect(r.diagnostics[0]!.message).toContain('Did you mean "dropDeadLeaves"?');
    expect(r.diagnostics[1]!.message).toContain('Did you mean "compaction"?');

    const semantic = write("apiVersion: reins/v1alpha1\nkind: Algorithm\nmetadata: {name: g}\nspec:\n  type: GRPO\n  groupSize: 1\n");
    expect(codes(loadAlgorithm(semantic.file, { env: {} }).diagnostics)).toEqual([["GroupSizeTooSmall", 6]]);
  });

  it("names a file without exactly one Algorithm, and bad YAML, as such; relative paths come from the caller's cwd", () => {
    const none = write("apiVersion: reins/v1alpha1\nkind: Task\nmetadata: {name: t}\nspec: {instruction: x, verifier: {checks: [{fileExists: a}]}}\n");
    expect(codes(loadAlgorithm("algo.yaml", { cwd: none.dir, env: {} }).diagnostics)).toEqual([["AlgorithmNotFound", 1]]);
    const two = write(
      "apiVersion: reins/v1alpha1\nkind: Algorithm\nmetadata: {name: a}\nspec: {type: GRPO}\n---\napiVersion: reins/v1alpha1\nkind: Algorithm\nmetadata: {name: b}\nspec: {type: PPO}\n",
    );
    expect(codes(loadAlgorithm(two.file, { env: {} }).diagnostics)).toEqual([["AlgorithmAmbiguous", 8]]);
    const syntax = write("kind: [\n");
    expect(codes(loadAlgorithm(syntax.file, { env: {} }).diagnostics)[0]?.[0]).toBe("YamlSyntax");
    expect(codes(loadAlgorithm("missing.yaml", { cwd: none.dir, env: {} }).diagnostics)).toEqual([["FileNotFound", 1]]);
  });

  it("reads the shipped Algorithm specs exactly as an Experiment that names them gets them", () => {
    const world = loadAndResolve(["specs/algorithms"], { env: {} }).value.world;
    for (const name of ["grpo", "ppo"]) {
      const r = loadAlgorithm(`specs/algorithms/${name}.yaml`, { env: {} });
      expect(r.diagnostics).toEqual([]);
      expect(r.value).toEqual(world.algorithms.get(name)!.value);
    }
    const experiment = write(
      `apiVersion: reins/v1alpha1
kind: Experiment
metadata: {name: x}
spec:
  model: {name: qwen3}
  tasks: [{name: t}]
  harnesses: [{name: reins-agent}]
  algorithm: {type: GRPO}
  steps: 1
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec: {instruction: x, verifier: {checks: [{fileExists: a}]}}
`,
      "exp.yaml",
    );
    expect(compilePlan([experiment.file], { env: {} }).value!.algorithm).toEqual(defaultAlgorithm());
  });

  it("is what `reins trajectories --algorithm` uses, and its mistakes stop the command", async () => {
    const b = new RolloutBuilder("r-retry", seededRng(3));
    // A retried first call (its completion is a dead leaf), then a call that continues the retry.
    const h = b.tokens(50);
    b.call(h, b.tokens(10), { error: { kind: "engine", message: "500" } });
    const next = [...h, ...b.call(h, b.tokens(12)), ...b.tokens(20)];
    b.call(next, b.tokens(4));
    const calls = write(`${b.records.map((r) => JSON.stringify(r)).join("\n")}\n`, "calls.jsonl");
    const keep = write("apiVersion: reins/v1alpha1\nkind: Algorithm\nmetadata: {name: keep}\nspec:\n  type: GRPO\n  filters: {dropDeadLeaves: false}\n");
    const bad = write("apiVersion: reins/v1alpha1\nkind: Algorithm\nmetadata: {name: bad}\nspec:\n  type: GRPO\n  filters: {dropDeadLeaf: false}\n");
    const run = async (algorithm?: string) => {
      let stdout = "";
      let stderr = "";
      const code = await runTrajectories(
        calls.file,
        { json: true, ...(algorithm ? { algorithm } : {}) },
        { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } },
      );
      return { code, out: stdout ? JSON.parse(stdout) : undefined, stderr };
    };
    const byDefault = await run();
    const kept = await run(keep.file);
    expect(byDefault.out.rollouts[0].droppedDeadLeaves).toBe(1);
    expect(kept.out.rollouts[0].droppedDeadLeaves).toBe(0);
    expect(kept.out.algorithm.filters.dropDeadLeaves).toBe(false);
    const failed = await run(bad.file);
    expect(failed.code).toBe(1);
    expect(failed.out.ok).toBe(false);
    expect(failed.out.diagnostics).toContainEqual(expect.objectContaining({ code: "UnknownField", file: bad.file, line: 6, column: 13 }));
  });
});
