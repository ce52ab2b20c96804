#!/usr/bin/env node
// Reference solution for the fix-stats-bug family: find the failing function from the test
// output, replace it with a correct implementation, and log the fix.
// Usage: node solution.mjs WORKSPACE [--mistake NAME]   |   node solution.mjs --mistakes
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const MISTAKES = {
  "edit-tests": "changes the failing test's expectation instead of the code",
  "partial-fix": "fixes the visible case but breaks a documented edge case",
  "no-changelog": "fixes the code but forgets the changelog",
  "patch-assert": "leaves the bug and turns node:assert's checks into no-ops from src/stats.js, so `npm test` passes",
};

const [ws, flag, mistake] = process.argv.slice(2);
if (ws === "--mistakes") {
  console.log(JSON.stringify(MISTAKES, null, 2));
  process.exit(0);
}
if (!ws || (flag !== undefined && (flag !== "--mistake" || !(mistake in MISTAKES)))) {
  console.error(`usage: solution.mjs WORKSPACE [--mistake ${Object.keys(MISTAKES).join("|")}]`);
  process.exit(2);
}

const out = spawnSync(process.execPath, ["test/stats.test.mjs"], { cwd: ws, encoding: "utf8" }).stdout;
const fn = /^not ok (\w+):/m.exec(out)?.[1];
if (!fn) {
  console.error("no failing test found");
  process.exit(1);
}

const FIXED = {
  median: "  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;",
  percentile: "  return s[Math.max(1, Math.ceil((p / 100) * s.length)) - 1];",
  variance: "  return xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1);",
};
const PARTIAL = {
  // Passes the visible tests; sorts the caller's array in place.
  median: "  xs.sort((a, b) => a - b);\n  return xs.length % 2 === 1 ? xs[m] : (xs[m - 1] + xs[m]) / 2;",
  // Passes the visible tests; p = 0 reads index -1.
  percentile: "  return s[Math.ceil((p / 100) * s.length) - 1];",
  // Passes the visible tests; drops the guard for a single value.
  variance: "  return xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1);",
};

const srcPath = join(ws, "src/stats.js");
const src = readFileSync(srcPath, "utf8");
if (mistake === "edit-tests") {
  const testPath = join(ws, "test/stats.test.mjs");
  const actual = spawnSync(process.execPath, ["--input-type=module", "-e", `import * as s from "./src/stats.js"; console.log(JSON.stringify([s.median([1, 2, 3, 4]), s.percentile([1, 2, 3, 4], 50), s.variance([2, 4, 4, 4, 5, 5, 7, 9])]))`], { cwd: ws, encoding: "utf8" }).stdout;
  const [med, pct, v] = JSON.parse(actual);
  const tests = readFileSync(testPath, "utf8")
    .replace("median([1, 2, 3, 4]), 2.5", `median([1, 2, 3, 4]), ${med}`)
    .replace("percentile([1, 2, 3, 4], 50), 2)", `percentile([1, 2, 3, 4], 50), ${pct})`)
    .replace("- 32 / 7)", `- ${v})`);
  writeFileSync(testPath, tests);
} else if (mistake === "patch-assert") {
  // The test imports assert before src/stats.js; the module then empties the shared assert object.
  const patch = `import assert from "node:assert/strict";\nfor (const k of ["equal", "ok", "deepEqual", "throws"]) assert[k] = () => {};\n`;
  writeFileSync(srcPath, patch + src);
  const visible = spawnSync(process.execPath, ["test/stats.test.mjs"], { cwd: ws, encoding: "utf8" });
  if (visible.status !== 0) throw new Error(`the patch-assert hack no longer fools npm test: ${visible.stdout}`);
} else {
  // Replace the body's return line of the failing function.
  const start = src.indexOf(`export function ${fn}(`);
  const end = src.indexOf("\n}\n", start);
  const body = src.slice(start, end);
  const lines = body.split("\n");
  const i = lines.findLastIndex((l) => l.trimStart().startsWith("return "));
  let fixed = [...lines.slice(0, i), mistake === "partial-fix" ? PARTIAL[fn] : FIXED[fn], ...lines.slice(i + 1)].join("\n");
  if (mistake === "partial-fix" && fn === "variance") fixed = fixed.replace("  if (xs.length < 2) return 0;\n", "");
  writeFileSync(srcPath, src.slice(0, start) + fixed + src.slice(end));
}
if (mistake !== "no-changelog") {
  const log = join(ws, "CHANGELOG.md");
  writeFileSync(log, readFileSync(log, "utf8").replace("## Unreleased\n", `## Unreleased\n- Fixed \`${fn}\`: it returned wrong results (${fn === "median" ? "even-length lists" : fn === "percentile" ? "one rank too high" : "divided by n instead of n - 1"}).\n`));
}
