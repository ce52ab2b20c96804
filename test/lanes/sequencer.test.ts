/** The full lane starts its slowest files first, in the measured order, and keeps vitest's order for the rest. */
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import type { TestSpecification, Vitest } from "vitest/node";
import { SlowFirstSequencer } from "./sequencer.js";
import { SLOW_FILES } from "./slow-files.js";

/** Just what vitest's own sort reads: the root, and no cached results or sizes (a fresh clone). */
function freshCloneContext(): Vitest {
  const cache = { getFileTestResults: () => undefined, getFileStats: () => undefined };
  return { config: { root: process.cwd() }, cache } as unknown as Vitest;
}

function spec(file: string): TestSpecification {
  const project = { name: "", config: { sequence: { groupOrder: 0 }, isolate: true } };
  return { moduleId: resolve(file), project } as unknown as TestSpecification;
}

describe("the full lane's order", () => {
  it("puts the listed slow files first, longest first, then the others as vitest had them", async () => {
    const others = ["test/compiler/paths.test.ts", "test/lanes/guard.test.ts", "test/view/view.test.ts"];
    const files = [others[0]!, SLOW_FILES[1]!, others[1]!, others[2]!, SLOW_FILES[0]!].map(spec);
    const sorted = await new SlowFirstSequencer(freshCloneContext()).sort(files);
    expect(sorted.map((f) => f.moduleId)).toEqual([SLOW_FILES[0]!, SLOW_FILES[1]!, ...others].map((f) => resolve(f)));
  });
});
