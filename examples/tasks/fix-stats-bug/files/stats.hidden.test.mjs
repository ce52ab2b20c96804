// Hidden tests for src/stats.js: edge cases the visible tests do not cover.
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const { mean, median, percentile, variance } = await import(pathToFileURL(join(process.env.REINS_WORKSPACE, "src/stats.js")).href);

let failed = 0;
function test(name, fn) {
  try {
    fn();
  } catch (e) {
    failed++;
    console.error(`not ok ${name}: ${e.message.split("\n")[0]}`);
  }
}

test("mean: empty list throws", () => assert.throws(() => mean([]), RangeError));
test("median: unsorted even length", () => assert.equal(median([10, 2, 8, 4]), 6));
test("median: does not reorder its input", () => {
  const xs = [3, 1, 2, 5];
  median(xs);
  assert.deepEqual(xs, [3, 1, 2, 5]);
});
test("median: single value", () => assert.equal(median([7]), 7));
test("percentile: 0th is the minimum", () => assert.equal(percentile([5, 3, 9], 0), 3));
test("percentile: 90th of ten values", () => assert.equal(percentile([10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 90), 90));
test("percentile: out of range throws", () => assert.throws(() => percentile([1, 2], 101), RangeError));
test("variance: one value is 0", () => assert.equal(variance([5]), 0));
test("variance: two values", () => assert.equal(variance([1, 3]), 2));

if (failed > 0) {
  console.error(`${failed} hidden test(s) failed`);
  process.exit(1);
}
