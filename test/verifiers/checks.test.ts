import { describe, expect, it } from "vitest";
import { check, makeWorkspace } from "./fixture.js";

const files = {
  "hello.txt": "hi\n",
  "notes/readme.md": "# Notes\n\nTotal revenue: 1,234.50 EUR\n\n- one\n- two\n",
  "out/summary.json": JSON.stringify({
    total: 42,
    regions: [
      { name: "north", amount: 10.5 },
      { name: "south", amount: 31.5 },
    ],
    ok: true,
  }),
  "config.yaml": "server:\n  port: 8080\n  hosts: [a, b]\n",
  "data/sales.csv": 'region,amount,owner\nnorth,10.5,ada\nsouth,31.5,"bob, jr"\n',
  "bad.json": '{"total": 42,',
  "reports/a.md": "a",
  "reports/b.md": "b",
  "reports/sub/c.md": "c",
};

describe("file presence checks", () => {
  it("fileExists passes on a file and explains a missing one", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { fileExists: "hello.txt" })).pass).toBe(true);
    const r = await check(ws, { fileExists: "nope.txt" });
    expect(r).toMatchObject({ pass: false, score: 0, reason: "nope.txt does not exist." });
    expect((await check(ws, { fileExists: "notes" })).reason).toMatch(/directory, not a file/);
  });
  it("a missing file's reason points at a likely misplacement", async () => {
    const ws = await makeWorkspace({ "summary.json": "{}", "config/alerts.yml": "a: 1" });
    expect((await check(ws, { fileExists: "out/summary.json" })).reason).toBe("out/summary.json does not exist (there is summary.json at the workspace root).");
    expect((await check(ws, { yamlValid: "config/alerts.yaml" })).reason).toBe("config/alerts.yaml does not exist (there is config/alerts.yml).");
  });
  it("fileAbsent and directoryExists", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { fileAbsent: "tmp.txt" })).pass).toBe(true);
    expect((await check(ws, { fileAbsent: "hello.txt" })).reason).toBe("hello.txt exists but should not.");
    expect((await check(ws, { directoryExists: "notes" })).pass).toBe(true);
    expect((await check(ws, { directoryExists: "hello.txt" })).pass).toBe(false);
  });
  it("fileCount counts glob matches", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { fileCount: { glob: "reports/*.md", equals: 2 } })).pass).toBe(true);
    expect((await check(ws, { fileCount: { glob: "reports/**/*.md", equals: 3 } })).pass).toBe(true);
    expect((await check(ws, { fileCount: "**/*.{md,txt}" })).pass).toBe(true);
    const r = await check(ws, { fileCount: { glob: "reports/*.md", min: 3 } });
    expect(r.reason).toBe("the number of files matching reports/*.md is 2, expected at least 3.");
  });
});

describe("text checks", () => {
  it("fileEquals trims by default and shows the first difference", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { fileEquals: { path: "hello.txt", content: "hi" } })).pass).toBe(true);
    expect((await check(ws, { fileEquals: { path: "hello.txt", content: "hi", trim: false } })).pass).toBe(false);
    const r = await check(ws, { fileEquals: { path: "hello.txt", content: "hello" } });
    expect(r.reason).toBe('hello.txt differs from the expected content: line 1 is "hi", expected "hello".');
    expect((await check(ws, { fileEquals: { path: "hello.txt", content: "HI", ignoreCase: true } })).pass).toBe(true);
  });
  it("fileContains gives partial credit and names what is missing", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { fileContains: { path: "notes/readme.md", text: "Total revenue" } })).pass).toBe(true);
    const r = await check(ws, { fileContains: { path: "notes/readme.md", text: ["one", "two", "three", "four"] } });
    expect(r).toMatchObject({ pass: false, score: 0.5 });
    expect(r.reason).toBe('notes/readme.md does not contain "three", "four".');
  });
  it("fileNotContains", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { fileNotContains: { path: "notes/readme.md", text: "TODO" } })).pass).toBe(true);
    expect((await check(ws, { fileNotContains: { path: "notes/readme.md", text: ["two"] } })).reason).toMatch(/contains "two", which it should not/);
    expect((await check(ws, { fileNotContains: { path: "missing.md", text: "x" } })).pass).toBe(false);
  });
  it("fileMatches with flags, and a bad pattern is a verifier error", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { fileMatches: { path: "notes/readme.md", pattern: "^# notes$", flags: "im" } })).pass).toBe(true);
    expect((await check(ws, { fileMatches: { path: "notes/readme.md", pattern: "^\\d+$" } })).reason).toBe("notes/readme.md does not match /^\\d+$/.");
    const bad = await check(ws, { fileMatches: { path: "notes/readme.md", pattern: "(" } });
    expect(bad.error?.code).toBe("InvalidPattern");
  });
  it("lineCount", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { lineCount: { path: "notes/readme.md", equals: 6 } })).pass).toBe(true);
    expect((await check(ws, { lineCount: { path: "notes/readme.md", equals: 4, skipEmpty: true } })).pass).toBe(true);
    expect((await check(ws, { lineCount: { path: "notes/readme.md", max: 3 } })).reason).toBe(
      "the number of lines in notes/readme.md is 6, expected at most 3.",
    );
  });
});

describe("structured checks", () => {
  it("jsonValid explains malformed JSON", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { jsonValid: "out/summary.json" })).pass).toBe(true);
    expect((await check(ws, { jsonValid: "bad.json" })).reason).toMatch(/^bad\.json is not valid JSON: /);
  });
  it("jsonPath equals, tolerance, wildcard, length, exists", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { jsonPath: { path: "out/summary.json", query: "$.total", equals: 42 } })).pass).toBe(true);
    expect((await check(ws, { jsonPath: { path: "out/summary.json", query: "$.regions[1].amount", equals: 31.49, tolerance: 0.02 } })).pass).toBe(true);
    expect((await check(ws, { jsonPath: { path: "out/summary.json", query: "$.regions[*].name", equals: ["north", "south"] } })).pass).toBe(true);
    expect((await check(ws, { jsonPath: { path: "out/summary.json", query: "$.regions", length: 2 } })).pass).toBe(true);
    expect((await check(ws, { jsonPath: { path: "out/summary.json", query: "$['regions'][-1].name", equals: "SOUTH", ignoreCase: true } })).pass).toBe(true);
    expect((await check(ws, { jsonPath: { path: "out/summary.json", query: "$.missing", exists: false } })).pass).toBe(true);
    const off = await check(ws, { jsonPath: { path: "out/summary.json", query: "$.total", equals: 43 } });
    expect(off.reason).toBe("$.total in out/summary.json: found 42, expected 43.");
    const type = await check(ws, { jsonPath: { path: "out/summary.json", query: "$.regions[0].name", equals: 7 } });
    expect(type.reason).toBe('$.regions[0].name in out/summary.json: found a string "north", expected a number 7.');
    // Templates render values to strings: "42" and "true" match the number and the boolean.
    expect((await check(ws, { jsonPath: { path: "out/summary.json", query: "$.total", equals: "42" } })).pass).toBe(true);
    expect((await check(ws, { jsonPath: { path: "out/summary.json", query: "$.ok", equals: "true" } })).pass).toBe(true);
    expect((await check(ws, { numeric: { path: "out/summary.json", query: "$.total", equals: "42", tolerance: "0.5" } })).pass).toBe(true);
    expect((await check(ws, { jsonPath: { path: "out/summary.json", query: "$.nope" } })).reason).toBe("$.nope in out/summary.json does not exist.");
  });
  it("jsonSchema lists violations", async () => {
    const ws = await makeWorkspace(files);
    const schema = { type: "object", required: ["total", "currency"], properties: { total: { type: "integer" } } };
    const r = await check(ws, { jsonSchema: { path: "out/summary.json", schema } });
    expect(r.reason).toBe("out/summary.json does not satisfy the schema: / must have required property 'currency'.");
    expect((await check(ws, { jsonSchema: { path: "out/summary.json", schema: { type: "object" } } })).pass).toBe(true);
    expect((await check(ws, { jsonSchema: { path: "out/summary.json", schema: { type: "nonsense" } } })).error?.code).toBe("InvalidSchema");
  });
  it("jsonEquals compares documents, names the first difference and gives partial credit", async () => {
    const ws = await makeWorkspace(files);
    const expected = {
      total: 42,
      regions: [
        { name: "north", amount: 10.5 },
        { name: "south", amount: 31.5 },
      ],
      ok: true,
    };
    expect((await check(ws, { jsonEquals: { path: "out/summary.json", value: expected } })).pass).toBe(true);
    const off = await check(ws, { jsonEquals: { path: "out/summary.json", value: { ...expected, total: 43 } } });
    expect(off).toMatchObject({ pass: false, reason: "out/summary.json differs from the expected document: $.total: found 42, expected 43." });
    expect(off.score).toBeCloseTo(2 / 3, 12);
    const q = await check(ws, {
      jsonEquals: {
        path: "out/summary.json",
        query: "$.regions",
        value: {
          regions: [
            { name: "south", amount: 31.5 },
            { name: "north", amount: 10.5 },
          ],
        },
      },
    });
    expect(q.reason).toBe('out/summary.json differs from the expected document: $.regions[0].name: found "north", expected "south".');
    expect(q.score).toBe(0);
    const unordered = await check(ws, {
      jsonEquals: {
        path: "out/summary.json",
        query: "$.regions",
        ignoreOrder: true,
        value: {
          regions: [
            { name: "south", amount: 31.5 },
            { name: "north", amount: 10.5 },
          ],
        },
      },
    });
    expect(unordered.pass).toBe(true);
    const extra = await check(ws, { jsonEquals: { path: "out/summary.json", value: { total: 42, regions: expected.regions } } });
    expect(extra.reason).toBe("out/summary.json differs from the expected document: $.ok is not expected.");
  });
  it("yamlValid and yamlPath", async () => {
    const ws = await makeWorkspace({ ...files, "broken.yaml": "a: [1, 2\nb: c" });
    expect((await check(ws, { yamlValid: "config.yaml" })).pass).toBe(true);
    expect((await check(ws, { yamlValid: "broken.yaml" })).reason).toMatch(/^broken\.yaml is not valid YAML: /);
    expect((await check(ws, { yamlPath: { path: "config.yaml", query: "$.server.port", equals: 8080 } })).pass).toBe(true);
    expect((await check(ws, { yamlPath: { path: "config.yaml", query: "$.server.hosts", equals: ["a", "b"] } })).pass).toBe(true);
  });
});

describe("csv", () => {
  it("columns, rows and cells (quoted fields, where-selection, tolerance)", async () => {
    const ws = await makeWorkspace(files);
    const r = await check(ws, {
      csv: {
        path: "data/sales.csv",
        columns: ["region", "amount"],
        rowCount: 2,
        cells: [
          { row: 1, column: "owner", equals: "bob, jr" },
          { where: { region: "north" }, column: "amount", equals: 10.49, tolerance: 0.05 },
        ],
      },
    });
    expect(r.pass).toBe(true);
  });
  it("scores the fraction of assertions met and explains the misses", async () => {
    const ws = await makeWorkspace(files);
    const r = await check(ws, {
      csv: { path: "data/sales.csv", columns: ["region", "total"], rowCount: 2, cells: [{ row: 0, column: "amount", equals: 11 }] },
    });
    // 4 assertions (shape, columns, rowCount, one cell): 2 met.
    expect(r.score).toBe(0.5);
    expect(r.reason).toBe('data/sales.csv: column "total" is missing. row 0, column "amount" is 10.5, expected 11.');
  });
  it("malformed CSV and ragged rows", async () => {
    const ws = await makeWorkspace({ "a.csv": 'x,y\n"1,2\n', "b.csv": "x,y\n1,2\n3\n" });
    expect((await check(ws, { csv: { path: "a.csv" } })).reason).toBe("a.csv is not well-formed CSV: line 2: a quoted field is never closed.");
    expect((await check(ws, { csv: { path: "b.csv" } })).reason).toBe("b.csv: data row 1 has 1 fields, expected 2.");
  });
});

describe("value checks", () => {
  it("numeric from a pattern, the first number, or a query", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { numeric: { path: "notes/readme.md", pattern: "revenue: ([\\d,.]+)", equals: 1234.5 } })).pass).toBe(true);
    expect((await check(ws, { numeric: { path: "hello.txt", equals: 1 } })).reason).toBe("hello.txt contains no number.");
    expect((await check(ws, { numeric: { path: "out/summary.json", query: "$.total", min: 40, max: 50 } })).pass).toBe(true);
    const off = await check(ws, { numeric: { path: "out/summary.json", query: "$.total", equals: 41, tolerance: 0.5 } });
    expect(off.reason).toBe("$.total in out/summary.json is 42, expected 41 ± 0.5.");
  });
  it("sameValue compares one fact across files", async () => {
    const ws = await makeWorkspace({ ...files, "report.md": "The total is 42 units.\n", "wrong.md": "The total is 41 units.\n" });
    const ok = await check(ws, {
      sameValue: {
        sources: [
          { path: "out/summary.json", query: "$.total" },
          { path: "report.md", pattern: "total is (\\d+)" },
        ],
      },
    });
    expect(ok.pass).toBe(true);
    const bad = await check(ws, {
      sameValue: {
        sources: [
          { path: "out/summary.json", query: "$.total" },
          { path: "wrong.md", pattern: "total is (\\d+)" },
        ],
      },
    });
    expect(bad.reason).toBe('/total is (\\d+)/ in wrong.md is "41" but $.total in out/summary.json is 42.');
  });
});

describe("commandExitsZero", () => {
  it("runs in the workspace and reports the exit status with stderr", async () => {
    const ws = await makeWorkspace(files);
    expect((await check(ws, { commandExitsZero: "test -f hello.txt" })).pass).toBe(true);
    const r = await check(ws, { commandExitsZero: "echo boom >&2; exit 3" });
    expect(r.reason).toBe("`echo boom >&2; exit 3` exited 3: boom.");
    const missing = await check(ws, { commandExitsZero: ["/nonexistent/binary"] });
    expect(missing.error?.code).toBe("CommandNotStarted");
  });
});

it("names: a user's name wins over the default label", async () => {
  const ws = await makeWorkspace(files);
  expect((await check(ws, { fileExists: "hello.txt", name: "greeting written" })).name).toBe("greeting written");
  expect((await check(ws, { fileExists: "hello.txt" })).name).toBe("fileExists hello.txt");
});
