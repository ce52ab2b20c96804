/**
 * The layering of DESIGN.md §2 holds: dependency-cruiser finds no violation of
 * .dependency-cruiser.cjs in src/, and the rules bite (a small tree that breaks them fails).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..");
const CONFIG = join(ROOT, ".dependency-cruiser.cjs");
const DEPCRUISE = join(ROOT, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");

function depcruise(cwd: string) {
  const r = spawnSync(process.execPath, [DEPCRUISE, "src", "--config", CONFIG, "--output-type", "err"], { cwd, encoding: "utf8", timeout: 120_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

const fixtures: string[] = [];
afterAll(() => {
  for (const d of fixtures) rmSync(d, { recursive: true, force: true });
});

/** A throwaway tree of TypeScript files (path → source) with a tsconfig like reins's. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "reins-layering-"));
  fixtures.push(dir);
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true } }));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe("layering", () => {
  it("src/ follows every rule in .dependency-cruiser.cjs", () => {
    const r = depcruise(ROOT);
    expect(r.out).toContain("no dependency violations found");
    expect(r.code, r.out).toBe(0);
  });

  it("the rules bite: compiler → runtime, CLI → runtime internals, a cycle", () => {
    const dir = tree({
      "src/compiler/index.ts": 'import { run } from "../runtime/index.js";\nexport const plan = run;\n',
      "src/compiler/contract/plan.ts": "export type Plan = { hash: string };\n",
      "src/runtime/index.ts": 'export { run } from "./executor/run.js";\n',
      "src/runtime/executor/run.ts": 'import { helper } from "./helper.js";\nexport const run = () => helper();\n',
      "src/runtime/executor/helper.ts": 'import { run } from "./run.js";\nexport const helper = () => typeof run;\n',
      "src/cli/main.ts": 'import { run } from "../runtime/executor/run.js";\nrun();\n',
    });
    const r = depcruise(dir);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("compiler-is-below-runtime-and-cli: src/compiler/index.ts → src/runtime/index.ts");
    expect(r.out).toContain("cli-uses-front-doors: src/cli/main.ts → src/runtime/executor/run.ts");
    expect(r.out).toMatch(/no-circular: src\/runtime\/executor\/(run|helper)\.ts/);
  });

  it("the plan contract and the records stay leaves; trajectories never reach the proxy", () => {
    const dir = tree({
      "src/compiler/contract/plan.ts": 'import { x } from "../resolve/world.js";\nexport const y = x;\n',
      "src/compiler/resolve/world.ts": "export const x = 1;\n",
      "src/runtime/records/call-record.ts": 'import { z } from "../proxy/server.js";\nexport const w = z;\n',
      "src/runtime/proxy/server.ts": "export const z = 1;\n",
      "src/runtime/trajectories/tree.ts": 'import { z } from "../proxy/server.js";\nexport const t = z;\n',
      "src/runtime/store/run-store.ts": 'import { x } from "../../compiler/resolve/world.js";\nexport const s = x;\n',
    });
    const r = depcruise(dir);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("contract-is-a-leaf: src/compiler/contract/plan.ts → src/compiler/resolve/world.ts");
    expect(r.out).toContain("records-are-a-leaf: src/runtime/records/call-record.ts → src/runtime/proxy/server.ts");
    expect(r.out).toContain("trajectories-are-pure: src/runtime/trajectories/tree.ts → src/runtime/proxy/server.ts");
    expect(r.out).toContain("runtime-uses-compiler-front-door: src/runtime/store/run-store.ts → src/compiler/resolve/world.ts");
  });

  it("what the plan contract takes from the zod schemas is types only", () => {
    // dependency-cruiser parses with swc, which does not tell `import type` apart (see the config).
    const dir = join(ROOT, "src/compiler/contract");
    const offenders: string[] = [];
    for (const f of readdirSync(dir)) {
      const text = readFileSync(join(dir, f), "utf8");
      for (const m of text.matchAll(/^(?:import|export)\s+(type\s+)?[^;]*?from\s+"\.\.\/[^"]+";/gms)) if (!m[1]) offenders.push(`${f}: ${m[0].split("\n")[0]}`);
    }
    expect(offenders).toEqual([]);
  });
});
