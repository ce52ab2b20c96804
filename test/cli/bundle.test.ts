/**
 * The CLI starts from a bundle of src/ (bin/bundle.mjs), remade when a file under src/ changes: the
 * stamp that names it follows every file's path, size and modification time; the bundled modules
 * still find the files beside their sources (the built-in specs, by import.meta.url); and
 * REINS_FROM_SOURCES=1 runs the TypeScript sources instead, with the same answers.
 */
import { existsSync, mkdirSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript, no types
import { CACHE, stampSources } from "../../bin/bundle.mjs";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const stamp = stampSources as (dir?: string) => string;

describe("the CLI's bundle", () => {
  it("is named for the sources: any added, removed, renamed, resized or touched file changes the stamp", () => {
    const dir = tempDir("reins-bundle-stamp-");
    mkdirSync(join(dir, "cli"));
    writeFileSync(join(dir, "cli", "main.ts"), "export {};\n");
    writeFileSync(join(dir, "a.ts"), "export const a = 1;\n");
    const seen = new Set([stamp(dir)]);
    expect(stamp(dir)).toBe([...seen][0]);
    const changes: [string, () => void][] = [
      ["added", () => writeFileSync(join(dir, "b.ts"), "export const b = 2;\n")],
      ["resized", () => writeFileSync(join(dir, "a.ts"), "export const a = 10;\n")],
      ["touched", () => utimesSync(join(dir, "a.ts"), new Date(0), new Date(1_000_000))],
      ["renamed", () => renameSync(join(dir, "b.ts"), join(dir, "c.ts"))],
      ["removed", () => rmSync(join(dir, "c.ts"))],
    ];
    for (const [what, change] of changes) {
      change();
      const s = stamp(dir);
      expect(seen.has(s), `a ${what} file left the stamp as it was`).toBe(false);
      seen.add(s);
    }
  });

  it("runs the CLI, named for today's src/, and its modules find the files beside their sources", () => {
    const r = reins(["validate", "examples/quickstart/experiment.yaml", "--project-root", "."]);
    expect([r.code, r.stderr]).toEqual([0, "ok: 3 document(s), 64 task(s)\n"]);
    expect(existsSync(join(CACHE, `cli-${stamp()}`, "main.mjs"))).toBe(true);
    const fromSources = reins(["validate", "examples/quickstart/experiment.yaml", "--project-root", "."], { env: { REINS_FROM_SOURCES: "1" } });
    expect([fromSources.code, fromSources.stderr]).toEqual([r.code, r.stderr]);
  });
});
