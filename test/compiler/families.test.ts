import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadAndResolve } from "../../src/compiler/index.js";
import { expandMatrix, unknownMatrixKeys } from "../../src/compiler/resolve/matrix.js";
import { tempDir } from "../temp.js";

function family(spec: string, name = "fam"): string {
  const dir = tempDir("reins-fam-");
  const file = join(dir, "family.yaml");
  writeFileSync(file, `apiVersion: reins/v1alpha1\nkind: TaskFamily\nmetadata: {name: ${name}}\nspec:\n${spec}`);
  return file;
}

function tasksOf(file: string) {
  const r = loadAndResolve([file], { env: {} });
  return { tasks: [...r.value.world.tasks.values()].map((e) => e.value), diagnostics: r.diagnostics };
}

describe("matrix expansion (GitHub Actions semantics)", () => {
  it("takes the cartesian product and removes excluded cells", () => {
    const { cells } = expandMatrix({ who: ["ada", "bob"], lang: ["en", "fr"], exclude: [{ who: "bob", lang: "fr" }] });
    expect(cells).toEqual([
      { who: "ada", lang: "en" },
      { who: "ada", lang: "fr" },
      { who: "bob", lang: "en" },
    ]);
  });
  it("merges include entries into matching cells and adds the rest as new cells", () => {
    const { cells } = expandMatrix({
      fruit: ["apple", "pear"],
      animal: ["cat", "dog"],
      include: [
        { color: "green" },
        { color: "pink", animal: "cat" },
        { fruit: "apple", shape: "circle" },
        { fruit: "banana" },
        { fruit: "banana", animal: "cat" },
      ],
    });
    // The example from the GitHub Actions documentation.
    expect(cells).toEqual([
      { fruit: "apple", animal: "cat", color: "pink", shape: "circle" },
      { fruit: "apple", animal: "dog", color: "green", shape: "circle" },
      { fruit: "pear", animal: "cat", color: "pink" },
      { fruit: "pear", animal: "dog", color: "green" },
      { fruit: "banana" },
      { fruit: "banana", animal: "cat" },
    ]);
  });
});

describe("matrix include/exclude keys", () => {
  it("exclude names axes only; include may add declared parameters to the cells it matches", () => {
    const matrix = { who: ["ada", "bob"], exclude: [{ who: "bob" }, { tone: "warm" }], include: [{ who: "ada", tone: "warm" }, { whom: "cy" }] };
    expect(unknownMatrixKeys(matrix, ["tone"]).map((p) => [p.list, p.index, p.key])).toEqual([
      ["exclude", 1, "tone"],
      ["include", 1, "whom"],
    ]);
    expect(unknownMatrixKeys(matrix, []).map((p) => [p.list, p.index, p.key])).toEqual([
      ["exclude", 1, "tone"],
      ["include", 0, "tone"],
      ["include", 1, "whom"],
    ]);
  });

  it("a typo is an error with a did-you-mean, and no task is rendered from the family", () => {
    const file = family(`  parameters:
    - {name: who}
    - {name: tone, default: plain}
  matrix:
    who: [ada, bob]
    include:
      - {who: ada, tnoe: warm}
  template:
    instruction: "{{tone}} {{who}}"
    verifier: {checks: [{fileExists: f.txt}]}
`);
    const { tasks, diagnostics } = tasksOf(file);
    expect(tasks).toEqual([]);
    expect(diagnostics.map((d) => [d.code, d.line, d.column])).toEqual([["UnknownMatrixKey", 11, 20]]);
    expect(diagnostics[0]!.message).toContain('Did you mean "tone"?');
    const fixed = tasksOf(
      family(
        `  parameters:\n    - {name: who}\n    - {name: tone, default: plain}\n  matrix:\n    who: [ada, bob]\n    include:\n      - {who: ada, tone: warm}\n  template:\n    instruction: "{{tone}} {{who}}"\n    verifier: {checks: [{fileExists: f.txt}]}\n`,
      ),
    );
    expect(fixed.tasks.map((t) => t.instruction).sort()).toEqual(["plain bob", "warm ada"]);
  });

  it("an exclude entry that matches no cell is a warning", () => {
    const { tasks, diagnostics } = tasksOf(
      family(`  matrix:
    who: [ada, bob]
    exclude:
      - {who: cy}
  template:
    instruction: "{{who}}"
    verifier: {checks: [{fileExists: f.txt}]}
`),
    );
    expect(tasks.length).toBe(2);
    expect(diagnostics.map((d) => [d.code, d.severity, d.line])).toEqual([["MatrixEntryUnused", "warning", 8]]);
    expect(expandMatrix({ who: ["ada", "bob"], exclude: [{ who: "ada" }, { who: "cy" }] }).unusedExcludes).toEqual([1]);
  });
});

describe("TaskFamily expansion", () => {
  it("renders the contract family into named tasks with provenance", () => {
    const { tasks, diagnostics } = tasksOf("test/fixtures/valid/contract.yaml");
    expect(diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const greet = tasks.filter((t) => t.provenance?.family === "greet");
    expect(greet.map((t) => t.instruction).sort()).toEqual([
      "Write a greeting for ada in en to out/ada.txt",
      "Write a greeting for ada in fr to out/ada.txt",
      "Write a greeting for bob in en to out/bob.txt",
    ]);
    for (const t of greet) {
      expect(t.name).toMatch(/^greet-[a-z0-9-]+-[0-9a-f]{6}$/);
      expect(t.name.length).toBeLessThanOrEqual(63);
      expect(t.annotations["reins.dev/hash"]).toBe(t.provenance!.hash);
      expect(t.files[0]!.path).toBe(`in/${t.provenance!.parameters.who}.txt`);
      expect(t.verifier.checks[0]).toEqual({ type: "fileExists", path: `out/${t.provenance!.parameters.who}.txt` });
    }
  });

  it("is deterministic, and seeded generation depends on the seed", () => {
    const spec = (seed: number) =>
      `  generate:\n    count: 5\n    seed: ${seed}\n    values:\n      - {name: n, int: {min: 1, max: 1000}}\n      - {name: who, pick: [ada, bob, cy]}\n      - {name: label, template: "{{who}}-{{n}}"}\n  template:\n    instruction: "Count to {{n}} for {{label}}"\n    verifier: {checks: [{fileExists: out.txt}]}\n`;
    const a = tasksOf(family(spec(1))).tasks.map((t) => `${t.name}|${t.instruction}`);
    const b = tasksOf(family(spec(1))).tasks.map((t) => `${t.name}|${t.instruction}`);
    const c = tasksOf(family(spec(2))).tasks.map((t) => `${t.name}|${t.instruction}`);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    expect(a.length).toBe(5);
    for (const line of a) expect(line).toMatch(/Count to \d+ for (ada|bob|cy)-\d+$/);
  });

  it("never renders parameter values again (no template injection)", () => {
    const file = family(
      `  matrix:\n    evil: ["{{constructor.constructor}}", "{{#each this}}x{{/each}}", "{{lookup this 'a'}}"]\n  template:\n    instruction: "Do {{evil}}"\n    workspace: {files: [{path: "f.txt", content: "{{evil}}"}]}\n    verifier: {checks: [{fileExists: f.txt}]}\n`,
    );
    const { tasks, diagnostics } = tasksOf(file);
    expect(diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(tasks.map((t) => t.instruction).sort()).toEqual(["Do {{#each this}}x{{/each}}", "Do {{constructor.constructor}}", "Do {{lookup this 'a'}}"]);
    expect(tasks.every((t) => t.files[0]!.content.startsWith("{{"))).toBe(true);
  });

  it("blocks prototype access from templates", () => {
    const file = family(
      `  matrix:\n    who: [ada]\n  template:\n    instruction: "{{who.constructor.name}} {{__proto__}}"\n    verifier: {checks: [{fileExists: f.txt}]}\n`,
    );
    const { tasks, diagnostics } = tasksOf(file);
    // Either refused with a template diagnostic, or rendered without reaching Object internals.
    if (tasks.length > 0) expect(tasks[0]!.instruction).not.toContain("String");
    else expect(diagnostics.some((d) => d.code.startsWith("Template"))).toBe(true);
  });

  it("checks parameter types and names the matrix cell in the diagnostic", () => {
    const file = family(
      `  parameters:\n    - {name: n, type: integer}\n  matrix:\n    n: [1, two]\n  template:\n    instruction: "{{n}}"\n    verifier: {checks: [{fileExists: f.txt}]}\n`,
    );
    const { diagnostics } = tasksOf(file);
    const d = diagnostics.find((x) => x.code === "InvalidParameter");
    expect(d?.message).toContain('"n"');
    expect(d?.notes?.join(" ")).toContain('{"n":"two"}');
  });

  it("reports a rendered task that fails validation at the template position, with the cell", () => {
    const file = family(
      `  matrix:\n    t: ["60", "soon"]\n  template:\n    instruction: "x"\n    workspace: {files: [{path: "{{t}}.txt", content: "x"}, {path: "soon.txt", content: "y"}]}\n    verifier: {checks: [{fileExists: f.txt}]}\n`,
    );
    const { diagnostics, tasks } = tasksOf(file);
    expect(tasks.length).toBe(1);
    const d = diagnostics.find((x) => x.code === "DuplicateWorkspacePath");
    expect(d).toBeDefined();
    expect(d!.line).toBe(9);
    expect(d!.notes?.join(" ")).toContain("soon");
  });

  it("reports one diagnostic for a template error shared by every cell", () => {
    const file = family(`  matrix:\n    a: [1, 2, 3, 4]\n  template:\n    instruction: "{{b}}"\n    verifier: {checks: [{fileExists: f.txt}]}\n`);
    const { diagnostics } = tasksOf(file);
    const ds = diagnostics.filter((d) => d.code === "TemplateUnknownParameter");
    expect(ds.length).toBe(1);
    expect(ds[0]!.notes?.join(" ")).toContain("3 more cell");
  });
});

describe("typed parameters in templates", () => {
  it("a string that is exactly one parameter keeps the parameter's type", () => {
    const file = family(
      `  matrix:\n    t: [30, 60]\n  template:\n    instruction: "Finish in {{t}} seconds"\n    timeoutSeconds: "{{t}}"\n    verifier: {checks: [{fileExists: f.txt}]}\n`,
    );
    const { tasks, diagnostics } = tasksOf(file);
    expect(diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(tasks.map((t) => t.timeoutSeconds).sort()).toEqual([30, 60]);
    expect(tasks.map((t) => t.instruction).sort()).toEqual(["Finish in 30 seconds", "Finish in 60 seconds"]);
  });
});
