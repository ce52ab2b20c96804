/**
 * Small specs must not exhaust the compiler. Each attack is a hostile spec, compiled through the
 * front door and through the real CLI in a subprocess with a timeout, so a regression fails
 * instead of hanging: it ends with exit 1 and a diagnostic that names the limit, its value and
 * the position, without writing a plan. The controls show honest specs still compile.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan, validateSpecs, type Diagnostic } from "../../src/compiler/index.js";
import { reins as launch } from "../reins-cli.js";
import { tempDir } from "../temp.js";

/** Generous: the property is "ends with an answer", on a loaded 2-core machine. */
const CLI_TIMEOUT_MS = 60_000;

function reins(args: string[]) {
  const t0 = Date.now();
  const r = launch(args, { timeout: CLI_TIMEOUT_MS });
  return { ...r, seconds: (Date.now() - t0) / 1000 };
}

function write(text: string, name = "spec.yaml"): string {
  const file = join(tempDir("reins-bounds-"), name);
  writeFileSync(file, text);
  return file;
}

const EVALUATION = `---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: ev}
spec:
  tasks: [{family: fam}]
  harnesses: [{name: noop}]
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: noop}
spec: {command: ["true"]}
`;

function family(spec: string, template = `instruction: "do {{a}}"`): string {
  return `apiVersion: reins/v1alpha1
kind: TaskFamily
metadata: {name: fam}
spec:
${spec}
  template:
    ${template}
    verifier: {checks: [{fileExists: a.txt}]}
${EVALUATION}`;
}

const TEN = "[0,1,2,3,4,5,6,7,8,9]";

/** Compiles through the front door, then plans with the CLI: both end with `code` at a position. */
function expectStopped(file: string, code: string, line: number): Diagnostic {
  const t0 = Date.now();
  const r = compilePlan([file], { env: {} });
  const seconds = (Date.now() - t0) / 1000;
  expect(r.value).toBeUndefined();
  const d = r.diagnostics.find((x) => x.code === code);
  expect(d, JSON.stringify(r.diagnostics.slice(0, 3))).toBeDefined();
  expect(d!.severity).toBe("error");
  expect(d!.line).toBe(line);
  expect(d!.message).toMatch(/limit/);
  expect(d!.hint.length).toBeGreaterThan(10);
  expect(seconds).toBeLessThan(20);

  const out = join(tempDir("reins-bounds-out-"), "plan.json");
  const cli = reins(["plan", file, "--out", out]);
  expect(cli.signal, cli.stderr).toBeNull();
  expect(cli.code, cli.stderr).toBe(1);
  expect(cli.stderr).toContain(`:${line}:`);
  expect(cli.stderr).toContain(`error[${code}]`);
  expect(cli.stderr).toContain("hint:");
  expect(cli.stderr).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
  expect(existsSync(out)).toBe(false);
  return d!;
}

describe("bounded compilation: small specs cannot exhaust the compiler", () => {
  it("a 1e6-cell matrix is refused from its axis lengths, before any cell is made", () => {
    const file = write(
      family(
        `  matrix: {${"abcdef"
          .split("")
          .map((c) => `${c}: ${TEN}`)
          .join(", ")}}`,
      ),
    );
    const d = expectStopped(file, "MatrixTooLarge", 5);
    expect(d.message).toContain("1,000,000 cells");
    expect(d.message).toContain("200,000");
  });

  it("272 bytes of YAML anchors that make the same million tasks are refused the same way", () => {
    const attack = `apiVersion: reins/v1alpha1
kind: TaskFamily
metadata: {name: fam}
spec:
  matrix: {a: &x ${TEN}, b: *x, c: *x, d: *x, e: *x, f: *x}
  template: {instruction: "{{a}}", verifier: {checks: [{fileExists: a}]}}
`;
    expect(attack.length).toBeLessThanOrEqual(272);
    const d = expectStopped(write(attack + EVALUATION), "MatrixTooLarge", 5);
    expect(d.message).toContain("1,000,000 cells");
  });

  it("aliases that expand a document past a million values are an AliasBomb, counted as the resolver walks them", () => {
    const items = Array.from({ length: 20_000 }, (_, i) => i).join(",");
    const file = write(`apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec:
  instruction: &a [${items}]
  verifier: {checks: [{fileExists: [${Array(60).fill("*a").join(",")}]}]}
`);
    const t0 = Date.now();
    const r = validateSpecs([file], { env: {} });
    expect((Date.now() - t0) / 1000).toBeLessThan(20);
    const d = r.diagnostics.find((x) => x.code === "AliasBomb");
    expect(d, JSON.stringify(r.diagnostics.slice(0, 3))).toBeDefined();
    expect(d!.message).toContain("1,000,000 values");
    const cli = reins(["validate", file]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain("error[AliasBomb]");
  });

  it("nested `repeat` cannot write a 400 MB plan: the helper's output is measured before it is built", () => {
    const file = write(family("  matrix: {a: [1, 2, 3, 4]}", `instruction: "{{repeat (repeat \\"x\\" 10000) 10000}}"`));
    const d = expectStopped(file, "RenderedTooLarge", 7);
    expect(d.message).toContain('"repeat"');
    expect(d.message).toContain("1 MiB");
    expect(d.notes).toContain('in matrix cell {"a":1}');
  });

  it("rendered text is capped per task and for the whole plan, not only per string", () => {
    // 4 strings of 900 KB each: every string fits, the task does not.
    const file = write(
      family(
        "  matrix: {a: [1, 2]}",
        `instruction: "{{repeat \\"x\\" 900}}{{repeat (repeat \\"y\\" 1000) 900}}"
    workspace: {files: [{path: a, content: "{{repeat (repeat \\"y\\" 1000) 900}}"}, {path: b, content: "{{repeat (repeat \\"y\\" 1000) 900}}"}]}`,
      ),
    );
    const d = expectStopped(file, "RenderedTooLarge", 8);
    expect(d.message).toContain("2 MiB");
    expect(d.message).toContain("per task");
  });

  it("2,000 `include` entries over a large matrix are refused before they are compared with every cell", () => {
    const params = Array.from({ length: 50 }, (_, i) => `    - {name: p${i}, type: integer, default: 0}`).join("\n");
    const includes = Array.from({ length: 2000 }, (_, i) => `{p${i % 50}: ${i}}`).join(", ");
    const range = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(",")}]`;
    const file = write(family(`  parameters:\n${params}\n  matrix: {a: ${range(400)}, b: ${range(250)}, include: [${includes}]}`));
    const d = expectStopped(file, "MatrixTooManyEntries", 56);
    expect(d.message).toContain("5,000,000");
  });

  it("one huge `exclude` entry counts by its size: it would be serialized for every cell it is compared with", () => {
    const cells = `[${Array.from({ length: 1000 }, (_, i) => `[${i}]`).join(",")}]`;
    const huge = `[${Array.from({ length: 10_000 }, (_, i) => i).join(",")}]`;
    const file = write(family(`  matrix: {a: ${cells}, exclude: [{a: ${huge}}]}`, `instruction: "do {{json a}}"`));
    const d = expectStopped(file, "MatrixTooManyEntries", 5);
    expect(d.message).toContain("comparisons");
  });

  it("nested `{{#each (range …)}}` stops at the template work limit, naming the template line and the cell", () => {
    const file = write(
      family(
        "  matrix: {a: [1]}",
        `instruction: |
      Count:
      {{#each (range 1 300)}}{{#each (range 1 300)}}{{#each (range 1 300)}}.{{/each}}{{/each}}{{/each}}`,
      ),
    );
    const d = expectStopped(file, "TemplateTooMuchWork", 9);
    expect(d.message).toContain("100,000 steps");
    expect(d.notes).toEqual(expect.arrayContaining(["template line 2", 'in matrix cell {"a":1}']));
  });

  it("template work is also bounded for the whole compile: many cells each under the task limit", () => {
    const cells = `[${Array.from({ length: 400 }, (_, i) => i).join(",")}]`;
    const file = write(family(`  matrix: {a: ${cells}}`, `instruction: "{{a}}{{#each (range 1 200)}}{{#each (range 1 200)}}.{{/each}}{{/each}}"`));
    const d = expectStopped(file, "TemplateTooMuchWork", 7);
    expect(d.message).toContain("in all");
    expect(d.notes?.some((n) => /cell\(s\) of family "fam" were not rendered/.test(n))).toBe(true);
  });

  it("a large parameter value shared by every cell is counted once per task, before any is made", () => {
    // Each of 10,000 tasks would carry the 5,000-item list in its name hash and annotations.
    const big = `[${Array.from({ length: 5000 }, (_, i) => i).join(",")}]`;
    const file = write(
      family(`  parameters: [{name: big, type: list}]\n  matrix: {a: [${Array.from({ length: 10_000 }, (_, i) => i).join(",")}], big: [${big}]}`),
    );
    const d = expectStopped(file, "FamilyTooLarge", 7);
    expect(d.message).toContain("20,000,000");
  });

  it("a template of 100,000 empty `{{a}}` over 10,000 cells is refused from its size: no output, but a billion lookups", () => {
    const file = write(
      family(`  matrix: {a: [""], i: [${Array.from({ length: 10_000 }, (_, i) => i).join(",")}]}`, `instruction: "${"{{a}}".repeat(100_000)}{{i}}"`),
    );
    const d = expectStopped(file, "FamilyTooLarge", 6);
    expect(d.message).toContain("100,00");
  });

  it("an evaluation of a billion rollouts is refused from its counts", () => {
    const file = write(
      family(`  matrix: {a: [${Array.from({ length: 1000 }, (_, i) => i).join(",")}]}`).replace(
        "  harnesses: [{name: noop}]",
        "  harnesses: [{name: noop}]\n  attempts: 10000",
      ),
    );
    const d = expectStopped(file, "PlanTooLarge", 16);
    expect(d.message).toContain("10,000,000 rollouts");
  });

  it("many Evaluations in one `validate` share the rollout limit: each under it, together over it", () => {
    const base = family(`  matrix: {a: [${Array.from({ length: 1000 }, (_, i) => i).join(",")}]}`).replace(
      "  harnesses: [{name: noop}]",
      "  harnesses: [{name: noop}]\n  attempts: 550",
    );
    const second = `---\napiVersion: reins/v1alpha1\nkind: Evaluation\nmetadata: {name: ev2}\nspec:\n  tasks: [{family: fam}]\n  harnesses: [{name: noop}]\n  attempts: 500\n`;
    const r = validateSpecs([write(base + second)], { env: {} });
    const errors = r.diagnostics.filter((d) => d.severity === "error");
    expect(errors.map((d) => d.code)).toEqual(["PlanTooLarge"]);
    expect(errors[0]!.message).toContain("500,000 rollouts, and the other plans compiled with it 550,000");
  }, 120_000);

  it("`validate` of any 1 MB spec ends with an answer", () => {
    const MB = 1024 * 1024;
    const specs: Record<string, string> = {
      "deep block nesting": Array.from({ length: 2000 }, (_, i) => `${"  ".repeat(i)}a:`)
        .join("\n")
        .slice(0, MB),
      "deep flow nesting": `a: ${"[".repeat(MB / 2)}${"]".repeat(MB / 2)}`,
      "a wide map": `apiVersion: reins/v1alpha1\nkind: Task\nmetadata: {name: t}\nspec:\n${Array.from({ length: 60_000 }, (_, i) => `  k${i}: ${i}`).join("\n")}\n`,
      "many documents": Array.from({ length: 25_000 }, (_, i) => `kind: Task\nmetadata: {name: t${i}}`).join("\n---\n"),
      "a long string": `apiVersion: reins/v1alpha1\nkind: Task\nmetadata: {name: t}\nspec:\n  instruction: "${"x".repeat(MB)}"\n  verifier: {checks: [{fileExists: a}]}\n`,
      "many tasks": Array.from(
        { length: 7000 },
        (_, i) => `apiVersion: reins/v1alpha1\nkind: Task\nmetadata: {name: t${i}}\nspec: {instruction: do, verifier: {checks: [{fileExists: a}]}}`,
      ).join("\n---\n"),
      "a list of a million values": `apiVersion: reins/v1alpha1\nkind: Task\nmetadata: {name: t}\nspec:\n  x: [${"1,".repeat(MB / 2)}1]\n`,
      "a large template loop": family(
        `  matrix: {a: [${Array.from({ length: 100_000 }, (_, i) => i).join(",")}]}`,
        `instruction: "{{#each (range 1 99)}}{{a}}{{/each}}"`,
      ),
    };
    for (const [what, text] of Object.entries(specs)) {
      expect(text.length, what).toBeLessThanOrEqual(1.1 * MB);
      const r = reins(["validate", write(text), "--json"]);
      expect(r.signal, `${what}: ${r.stderr.slice(0, 300)}`).toBeNull();
      expect([0, 1], `${what}: ${r.stderr.slice(0, 300)}`).toContain(r.code);
      const out = JSON.parse(r.stdout) as { ok: boolean; diagnostics: Diagnostic[] };
      if (r.code === 1)
        expect(
          out.diagnostics.some((d) => d.severity === "error" && d.code && d.hint),
          what,
        ).toBe(true);
      expect(r.stderr, what).not.toContain("internal error");
    }
  }, 600_000);

  it("control: an honest family of 20,000 tasks with a loop in its template still plans", () => {
    const list = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(",")}]`;
    const file = write(family(`  matrix: {a: ${list(200)}, b: ${list(100)}}`, `instruction: "Sum {{#each (range 1 5)}}{{this}}+{{/each}}{{a}}"`));
    const r = compilePlan([file], { env: {} });
    expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(r.value!.tasks.length).toBeGreaterThan(10_000);
    expect(r.value!.tasks[0]!.instruction).toMatch(/^Sum 1\+2\+3\+4\+5\+\d+$/);
  }, 120_000);
});
