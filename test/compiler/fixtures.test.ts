/**
 * Invalid fixtures carry `# ERROR: <Code>` on the line that must be flagged; the compiler must
 * report exactly those (line → code) and nothing else as an error. Valid fixtures have no errors.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { validateSpecs } from "../../src/compiler/index.js";

const INVALID = "test/fixtures/invalid";
const VALID = "test/fixtures/valid";

function expectedMarkers(file: string): string[] {
  const text = readFileSync(file, "latin1");
  const out: string[] = [];
  text.split("\n").forEach((line, i) => {
    for (const m of line.matchAll(/# ERROR: (\w+)/g)) out.push(`${i + 1}:${m[1]}`);
  });
  return out.sort();
}

describe("invalid fixtures", () => {
  const files = readdirSync(INVALID).filter((f) => f.endsWith(".yaml"));
  it("there are fixtures for every kind of bad input", () => {
    expect(files.length).toBeGreaterThanOrEqual(20);
  });
  for (const f of files) {
    it(f, () => {
      const file = join(INVALID, f);
      const r = validateSpecs([file], { env: {} });
      const got = r.diagnostics
        .filter((d) => d.severity === "error")
        .map((d) => `${d.line}:${d.code}`)
        .sort();
      expect(got).toEqual(expectedMarkers(file));
      for (const d of r.diagnostics) {
        expect(d.message.length).toBeGreaterThan(5);
        expect(d.hint.length).toBeGreaterThan(5);
        expect(d.file).toBe(file);
        expect(d.column).toBeGreaterThanOrEqual(1);
      }
    });
  }
});

describe("valid fixtures", () => {
  for (const f of readdirSync(VALID).filter((x) => x.endsWith(".yaml"))) {
    it(f, () => {
      const r = validateSpecs([join(VALID, f)], { env: {} });
      expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    });
  }
  it("the shipped library and the examples validate", () => {
    for (const dir of ["specs", "examples"]) {
      const r = validateSpecs([dir], { env: {} });
      expect(
        r.diagnostics.filter((d) => d.severity === "error"),
        dir,
      ).toEqual([]);
    }
  });
});
