/** The verifier spec (src/compiler/schema/checks.ts, verifier.ts) and its agreement with the runtime's checks. */
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CHECK_SHORTHAND, CHECK_TYPES, CheckSpecSchema, checkSchemas } from "../../src/compiler/schema/checks.js";
import { VerifierSpecSchema } from "../../src/compiler/schema/verifier.js";
import { normalizeCheck, resolveVerifierSpec } from "../../src/compiler/resolve/verifier.js";
import { validateCheck, validateVerifier } from "../../src/compiler/resolve/verifier-problems.js";
import { CHECKS } from "../../src/runtime/verifiers/checks/registry.js";

describe("VerifierSpecSchema", () => {
  const json = z.toJSONSchema(VerifierSpecSchema, { target: "draft-7", io: "input" });
  const ajv = new Ajv({ strict: false, allErrors: true });
  const validate = ajv.compile(json);

  it("exports to draft-07 JSON Schema, and ajv agrees with zod", () => {
    expect(json.$schema).toBe("http://json-schema.org/draft-07/schema#");
    const samples: unknown[] = [
      { checks: [{ fileExists: "hello.txt" }, { fileEquals: { path: "hello.txt", content: "hi" } }] },
      { checks: [{ fileExists: "a", name: "named", weight: 2 }, { commandExitsZero: ["npm", "test"] }] },
      { checks: [{ numeric: { path: "a", equals: "{{x}}" } }] },
      { checks: [{ numeric: { path: "a", equals: "x" } }] },
      { checks: [{ numeric: { path: "a", equals: "42" } }] },
      { checks: [{ fileExist: "typo" }] },
      { checks: [{ fileExists: "a", jsonValid: "b" }] },
      { checks: [{ fileEquals: { path: "a", content: "x", extra: 1 } }] },
      { checks: [{ csv: { path: "a.csv", rowCount: 2, cells: [{ row: 0, column: "x", equals: 1 }] } }] },
      {
        rubric: { items: ["clear", { id: "totals", criterion: "states totals", weight: 2 }], files: ["*.md"] },
        combine: { mode: "weighted", weights: { code: 0.7, rubric: 0.3 } },
      },
      { combine: { mode: "average" } },
      { combine: { mode: "weighted", weights: { chekcs: 1 } } },
      { script: { command: "python3 $REINS_HIDDEN/grade.py", timeoutSeconds: 60 }, passThreshold: 0.5 },
      { passThreshold: 2 },
    ];
    for (const s of samples) expect(validate(s), JSON.stringify(s)).toBe(VerifierSpecSchema.safeParse(s).success);
    const accepted = samples.map((s) => VerifierSpecSchema.safeParse(s).success);
    expect(accepted).toEqual([true, true, true, false, true, false, false, false, true, true, false, false, true, false]);
  });

  it("every field carries a description in the JSON Schema", () => {
    const text = JSON.stringify(json);
    expect(text).toContain("Field delimiter");
    expect(text).toContain("simple JSONPath");
  });
});

describe("normalizeCheck", () => {
  it("turns single-key objects into ResolvedChecks", () => {
    expect(normalizeCheck({ fileExists: "hello.txt" })).toEqual({ type: "fileExists", path: "hello.txt" });
    expect(normalizeCheck({ fileEquals: { path: "hello.txt", content: "hi" } })).toEqual({ type: "fileEquals", path: "hello.txt", content: "hi" });
    expect(normalizeCheck({ fileCount: "*.md", name: "reports", weight: 2 })).toEqual({ type: "fileCount", glob: "*.md", name: "reports", weight: 2 });
    expect(normalizeCheck({ commandExitsZero: "npm test" })).toEqual({ type: "commandExitsZero", command: ["sh", "-c", "npm test"] });
    expect(normalizeCheck({ commandExitsZero: ["npm", "test"] })).toEqual({ type: "commandExitsZero", command: ["npm", "test"] });
  });
  it("turns numbers rendered as strings back into numbers", () => {
    expect(normalizeCheck({ numeric: { path: "a", equals: "42", tolerance: "0.5" } })).toEqual({ type: "numeric", path: "a", equals: 42, tolerance: 0.5 });
    expect(normalizeCheck({ csv: { path: "a", rowCount: "3", cells: [{ row: "1", column: "7", equals: "2.5" }] } })).toEqual({
      type: "csv",
      path: "a",
      rowCount: 3,
      cells: [{ row: 1, column: "7", equals: "2.5" }],
    });
  });
  it("every schema type has a runtime check and every shorthand names a schema field", () => {
    expect([...CHECKS.keys()].sort()).toEqual([...CHECK_TYPES].sort());
    for (const [type, field] of Object.entries(CHECK_SHORTHAND)) {
      expect(Object.keys(checkSchemas[type as keyof typeof checkSchemas].shape)).toContain(field);
    }
    expect(CheckSpecSchema.safeParse({ fileExists: "x" }).success).toBe(true);
  });
});

describe("resolveVerifierSpec", () => {
  it("applies defaults", () => {
    const v = resolveVerifierSpec({
      checks: [{ fileExists: "a" }],
      script: { command: "true" },
      rubric: { items: ["clear", { criterion: "short", weight: 2 }] },
    });
    expect(v).toEqual({
      name: "inline",
      checks: [{ type: "fileExists", path: "a" }],
      combine: { mode: "weighted", weights: {} },
      passThreshold: 1,
      script: { command: ["sh", "-c", "true"], timeoutSeconds: 120 },
      rubric: {
        items: [
          { id: "item-1", criterion: "clear", weight: 1 },
          { id: "item-2", criterion: "short", weight: 2 },
        ],
        files: [],
      },
    });
  });
});

describe("validateCheck and validateVerifier", () => {
  it("find what the schema cannot", () => {
    expect(validateCheck(normalizeCheck({ fileMatches: { path: "a", pattern: "(" } }))[0]?.field).toBe("pattern");
    expect(validateCheck(normalizeCheck({ jsonPath: { path: "a", query: "$..deep" } }))[0]?.message).toBe("`$..deep` is not a JSONPath reins understands.");
    expect(validateCheck(normalizeCheck({ fileEquals: { path: "a" } }))[0]?.field).toBe("content");
    expect(validateCheck(normalizeCheck({ numeric: { path: "a" } }))[0]?.field).toBe("equals");
    expect(validateCheck(normalizeCheck({ lineCount: { path: "a", min: 5, max: 2 } }))[0]?.message).toBe("min (5) is greater than max (2).");
    expect(validateCheck(normalizeCheck({ csv: { path: "a", cells: [{ column: "x", equals: 1 }] } }))[0]?.field).toBe("cells[0].row");
    expect(validateCheck(normalizeCheck({ jsonPath: { path: "a", query: "$.a['b c'][0][*].d" } }))).toEqual([]);
  });
  it("weights must name parts the verifier has", () => {
    const v = resolveVerifierSpec({ checks: [{ fileExists: "a" }], combine: { mode: "weighted", weights: { checks: 0.7, rubric: 0.3 } } });
    expect(validateVerifier(v).map((p) => p.field)).toEqual(["combine.weights.rubric"]);
    expect(validateVerifier(resolveVerifierSpec({}))[0]?.message).toMatch(/no checks, script or rubric/);
    expect(
      validateVerifier(resolveVerifierSpec({ checks: [{ fileExists: "a" }], combine: { mode: "weighted", weights: { code: 1, checks: 1 } } })).map(
        (p) => p.field,
      ),
    ).toEqual(["combine.weights.code"]);
  });
});

describe("numbers written as templates", () => {
  it("a template passes the schema; what it renders to is checked after normalization", () => {
    expect(VerifierSpecSchema.safeParse({ checks: [{ numeric: { path: "a", equals: "{{total}}" } }] }).success).toBe(true);
    expect(VerifierSpecSchema.safeParse({ checks: [{ numeric: { path: "a", equals: "forty" } }] }).success).toBe(false);
    expect(validateCheck(normalizeCheck({ numeric: { path: "a", equals: "{{total}}" } }))).toEqual([
      {
        field: "equals",
        path: ["equals"],
        message: '`equals` is "{{total}}", not a number.',
        hint: "Write a number; in a TaskFamily, make sure the template renders to one.",
      },
    ]);
    expect(validateCheck(normalizeCheck({ numeric: { path: "a", equals: "42" } }))).toEqual([]);
    expect(validateCheck(normalizeCheck({ csv: { path: "a", cells: [{ row: "{{r}}", column: "x", equals: 1 }] } }))[0]).toMatchObject({
      field: "cells[0].row",
      path: ["cells", 0, "row"],
    });
  });
});
