// Tests for src/stats.js. Run: node test/stats.test.mjs
import assert from "node:assert/strict";
import { mean, median, percentile, variance } from "../src/stats.js";

let failed = 0;
function test(name, fn) {
  try {
    fn();
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok ${name}: ${e.message.split("\n")[0]}`);
  }
}

test("mean: average of a list", () => assert.equal(mean([1, 2, 3, 4]), 2.5));
test("median: odd length", () => assert.equal(median([3, 1, 2]), 2));
test("median: even length", () => assert.equal(median([1, 2, 3, 4]), 2.5));
test("percentile: 50th, nearest rank", () => assert.equal(percentile([1, 2, 3, 4], 50), 2));
test("percentile: 100th is the maximum", () => assert.equal(percentile([4, 1, 3, 2], 100), 4));
test("variance: sample variance", () => assert.ok(Math.abs(variance([2, 4, 4, 4, 5, 5, 7, 9]) - 32 / 7) < 1e-12));

if (failed > 0) {
  console.log(`${failed} failed`);
  process.exit(1);
}
