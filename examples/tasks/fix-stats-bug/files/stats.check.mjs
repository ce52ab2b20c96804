// The verifier's check of src/stats.js: `node stats.check.mjs visible|hidden`.
// The module under test is loaded only in a child process, which calls it for each case and
// prints what it returned or threw; this process compares those answers with the expected ones
// and prints "<suite>: N of N cases passed" only when every case matches. A module that ends the
// process early, or patches `assert`, answers nothing here and fails.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const CASES = {
  // The same cases as test/stats.test.mjs.
  visible: [
    ["mean: average of a list", "mean", [[1, 2, 3, 4]], { value: 2.5 }],
    ["median: odd length", "median", [[3, 1, 2]], { value: 2 }],
    ["median: even length", "median", [[1, 2, 3, 4]], { value: 2.5 }],
    ["percentile: 50th, nearest rank", "percentile", [[1, 2, 3, 4], 50], { value: 2 }],
    ["percentile: 100th is the maximum", "percentile", [[4, 1, 3, 2], 100], { value: 4 }],
    ["variance: sample variance", "variance", [[2, 4, 4, 4, 5, 5, 7, 9]], { value: 32 / 7 }],
  ],
  // Edge cases the visible tests do not cover.
  hidden: [
    ["mean: empty list throws", "mean", [[]], { throws: "RangeError" }],
    ["median: unsorted even length", "median", [[10, 2, 8, 4]], { value: 6 }],
    ["median: does not reorder its input", "median", [[3, 1, 2, 5]], { value: 2.5 }],
    ["median: single value", "median", [[7]], { value: 7 }],
    ["percentile: 0th is the minimum", "percentile", [[5, 3, 9], 0], { value: 3 }],
    ["percentile: 90th of ten values", "percentile", [[10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 90], { value: 90 }],
    ["percentile: out of range throws", "percentile", [[1, 2], 101], { throws: "RangeError" }],
    ["variance: one value is 0", "variance", [[5]], { value: 0 }],
    ["variance: two values", "variance", [[1, 3]], { value: 2 }],
  ],
};

// The child: imports the module, answers each call as a JSON line, input unchanged or not.
const CHILD = `
const m = await import(process.argv[1]);
const calls = JSON.parse(process.argv[2]);
const out = [];
for (const [fn, args] of calls) {
  const before = JSON.stringify(args);
  try {
    const value = m[fn](...args);
    out.push({ value, unchanged: JSON.stringify(args) === before });
  } catch (e) {
    out.push({ threw: e?.name ?? String(e), unchanged: JSON.stringify(args) === before });
  }
}
process.stdout.write("ANSWERS " + JSON.stringify(out) + "\\n");
`;

const suite = process.argv[2];
const cases = CASES[suite];
if (!cases) {
  console.error("usage: node stats.check.mjs visible|hidden");
  process.exit(2);
}
const module = pathToFileURL(join(process.env.REINS_WORKSPACE ?? process.cwd(), "src/stats.js")).href;
const calls = cases.map(([, fn, args]) => [fn, args]);
const child = spawnSync(process.execPath, ["--input-type=module", "-e", CHILD, module, JSON.stringify(calls)], { encoding: "utf8", timeout: 20_000 });
const line = (child.stdout ?? "").split("\n").findLast((l) => l.startsWith("ANSWERS "));
let answers;
try {
  answers = line ? JSON.parse(line.slice("ANSWERS ".length)) : undefined;
} catch {
  answers = undefined;
}
if (!Array.isArray(answers) || answers.length !== cases.length) {
  console.error(`src/stats.js gave no answers (exit ${child.status}${child.signal ? `, ${child.signal}` : ""}): ${(child.stderr ?? "").trim().split("\n").slice(-2).join(" | ")}`);
  process.exit(1);
}
let failed = 0;
cases.forEach(([name, , , want], i) => {
  const got = answers[i] ?? {};
  const ok =
    got.unchanged === true &&
    ("throws" in want ? got.threw === want.throws : typeof got.value === "number" && Math.abs(got.value - want.value) < 1e-12);
  if (!ok) {
    failed++;
    console.error(`not ok ${name}: got ${JSON.stringify(got)}`);
  }
});
if (failed > 0) {
  console.error(`${suite}: ${failed} of ${cases.length} cases failed`);
  process.exit(1);
}
console.log(`${suite}: ${cases.length} of ${cases.length} cases passed`);
