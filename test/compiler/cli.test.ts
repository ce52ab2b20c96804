/** The CLI as a user meets it: exit codes, JSON on stdout, diagnostics on stderr, no stack traces. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reins as launch } from "../reins-cli.js";
import { tempDir } from "../temp.js";

function reins(args: string[], env: Record<string, string> = {}) {
  return launch(args, { timeout: 30_000, env });
}

describe("reins CLI", () => {
  it("validate --json prints {ok, diagnostics} and exits 0 on valid input", () => {
    const r = reins(["validate", "test/fixtures/valid/contract.yaml", "--json"]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.ok).toBe(true);
    expect(out.diagnostics).toEqual([]);
  });

  it("validate --json reports code, position and hint, exit 1", () => {
    const r = reins(["validate", "test/fixtures/invalid/unknown-field.yaml", "--json"]);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.ok).toBe(false);
    expect(out.diagnostics[0]).toMatchObject({ code: "UnknownField", severity: "error", file: "test/fixtures/invalid/unknown-field.yaml", line: 6, column: 3 });
    expect(out.diagnostics[0].message).toContain('Did you mean "timeoutSeconds"?');
    expect(out.diagnostics[0].hint).toBeTruthy();
  });

  it("human output shows file:line:col, a code frame and a hint on stderr; stdout stays empty", () => {
    const r = reins(["validate", "test/fixtures/invalid/unknown-field.yaml"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("test/fixtures/invalid/unknown-field.yaml:6:3: error[UnknownField]");
    expect(r.stderr).toContain("6 |   timeoutSecond: 300");
    expect(r.stderr).toContain("hint:");
  });

  it("every invalid fixture exits 1 without a stack trace and without hanging", () => {
    for (const f of readdirSync("test/fixtures/invalid")) {
      const r = reins(["validate", join("test/fixtures/invalid", f)]);
      expect(r.signal, f).toBeNull();
      expect(r.code, f).toBe(1);
      expect(r.stderr, f).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
      expect(r.stderr, f).not.toContain("internal error");
    }
  }, 300_000);

  it("missing files and directories are diagnostics too", () => {
    const r = reins(["validate", "no/such/file.yaml", "--json"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).diagnostics[0].code).toBe("FileNotFound");
  });

  it("plan --out writes the plan and prints hash and tasks; the hash is stable", () => {
    const dir = tempDir("reins-cli-");
    const a = reins(["plan", "test/fixtures/valid/contract.yaml", "--out", join(dir, "a.json"), "--json"]);
    const b = reins(["plan", "test/fixtures/valid/contract.yaml", "--out", join(dir, "b.json"), "--json"]);
    expect(a.code).toBe(0);
    const sa = JSON.parse(a.stdout);
    expect(sa.tasks).toBe(4);
    expect(sa.hash).toBe(JSON.parse(b.stdout).hash);
    const plan = JSON.parse(readFileSync(join(dir, "a.json"), "utf8"));
    expect(plan.hash).toBe(sa.hash);
    const d = reins(["diff", join(dir, "a.json"), join(dir, "b.json"), "--json"]);
    expect(d.code).toBe(0);
    expect(JSON.parse(d.stdout).same).toBe(true);
  });

  it("render prints the expanded documents as YAML", () => {
    const r = reins(["render", "test/fixtures/valid/contract.yaml"]);
    expect(r.code).toBe(0);
    expect(r.stdout.split("---\n").length).toBe(4);
    expect(r.stdout).toContain("Write a greeting for bob in en to out/bob.txt");
  });

  it("usage errors exit 2", () => {
    expect(reins(["validate"]).code).toBe(2);
    expect(reins(["no-such-command"]).code).toBe(2);
  });

  it("diff refuses files that are not plans", () => {
    const r = reins(["diff", "package.json", "package.json"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("InvalidPlan");
  });
});
