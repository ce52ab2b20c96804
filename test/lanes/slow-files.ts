/**
 * The files that start first in the full lane, longest first: the quickstart's learning runs, which
 * alone take most of the suite's length (vitest otherwise orders a fresh clone's files by size, and
 * these small files would start last, making the suite as long as they are on top of everything
 * before them). Only these: the other heavy files (vLLM, the trainer's checkpoints, the real
 * harnesses) saturate the 2 cores as much, and started beside them they slowed the learning runs
 * 1.7× (measured in one CI run, seed 1: 1,121 s against ~650 s when it ran beside lighter files).
 * Files not listed keep vitest's order after these. test/lanes/sequencer.ts reads this list.
 */
export const SLOW_FILES: readonly string[] = ["test/control/quickstart-learns.test.ts", "test/control/quickstart-broken-lr.test.ts"];
