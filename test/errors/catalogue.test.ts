/**
 * One catalogue: every code written anywhere in src/ is in CODES with a hint, so `error[Code]`
 * always has a hint to show and a code is never invented at a call site.
 *
 * The reverse direction is an exact list: codes catalogued but never written as a literal in src/
 * must be named in INDIRECT below, with where they come from. Codes are permanent, so a code that
 * stops being produced stays catalogued and moves to INDIRECT (as retired); this keeps the
 * catalogue honest without ever deleting a code.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CODES, isCode } from "../../src/compiler/contract/codes.js";
import { findCodeLiterals, type CodeUse } from "./code-literals.js";

/** Catalogued codes that src/ produces without writing them as a literal in a code position. */
const INDIRECT: Record<string, string> = {
  DuplicateDocument: "reserved: catalogued for the loader, which reads a file given twice once, silently",
  InvalidWeight: "reserved: harness mix weights are checked by the schema (InvalidValue) today",
  NoHarnesses: "reserved: an empty harness list is refused by the schema (InvalidValue) today",
  NotSupportedYet: "retired: its last use, a Harness's mcpServers, is supported now; kept for a field the schema takes that reins cannot honour yet",
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

const uses: CodeUse[] = sourceFiles("src").flatMap((f) => findCodeLiterals(readFileSync(f, "utf8"), f));

describe("the code catalogue", () => {
  it("holds every code src/ writes", () => {
    const missing = uses.filter((u) => !isCode(u.code)).map((u) => `${u.code} (${u.file}:${u.line})`);
    expect(missing, "add these codes to src/compiler/contract/codes.ts, each with a default hint").toEqual([]);
  });

  it("gives every code a hint that says what to do", () => {
    for (const [code, hint] of Object.entries(CODES)) {
      expect(code, "codes are PascalCase").toMatch(/^[A-Z][A-Za-z0-9]+$/);
      expect(hint.length, `${code} has a hint`).toBeGreaterThan(10);
    }
  });

  it("has no catalogued code that nothing produces, except the listed indirect ones", () => {
    const written = new Set(uses.map((u) => u.code));
    const unused = Object.keys(CODES)
      .filter((c) => !written.has(c))
      .sort();
    expect(unused).toEqual(Object.keys(INDIRECT).sort());
  });
});

describe("the code scanner", () => {
  it("finds codes in every place src/ writes them", () => {
    const source = `
      makeDiagnostic("CodeA1", at, "m", "h");
      fail<void>("CodeA2", "m");
      new TrainerError("CodeA3", "m", "h");
      new TokenizerLoadError("message", "CodeA4");
      const p = { code: "CodeA5", message: "m" };
      const q = { code: cond ? "CodeA6" : "CodeA7" };
      if (err.code === "CodeA8") {}
      const code = missing ? "CodeA9" : "CodeB1";
      export const BAD_CODES = ["CodeB2", "CodeB3"] as const;
      const KIND_CODES = { died: "CodeB4" } as const satisfies Record<string, Code>;
      export type FooCode = "CodeB5" | "CodeB6";
      class E { constructor(readonly code: "CodeB7" | "CodeB8") {} }
      interface I { code: "CodeB9" }
      function f(code: "CodeC1") {}
      switch (e.code) { case "CodeC2": break; }
      const r = o.error?.code ?? "CodeC3";
      throw new Error("Not a code sentence: Ignored");
      const kind = "ConfigMap";
      if (e.code === "ENOENT") {}
    `;
    const codes = findCodeLiterals(source, "x.ts").map((u) => u.code);
    expect(codes.sort()).toEqual(
      [
        "CodeA1",
        "CodeA2",
        "CodeA3",
        "CodeA4",
        "CodeA5",
        "CodeA6",
        "CodeA7",
        "CodeA8",
        "CodeA9",
        "CodeB1",
        "CodeB2",
        "CodeB3",
        "CodeB4",
        "CodeB5",
        "CodeB6",
        "CodeB7",
        "CodeB8",
        "CodeB9",
        "CodeC1",
        "CodeC2",
      ].sort(),
    );
  });
});
