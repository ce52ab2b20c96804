/**
 * The full lane's slowest files, longest first, as measured (vitest's per-file durations of a whole
 * run on 2 cores). They start first: vitest otherwise orders a fresh clone's files by their size, and
 * a slow file that starts last makes the suite as long as it is on top of everything before it.
 * Files not listed keep vitest's order after these. test/lanes/sequencer.ts reads this list.
 */
export const SLOW_FILES: readonly string[] = [
  "test/control/quickstart-learns.test.ts",
  "test/engines/vllm-train-real.test.ts",
  "test/control/quickstart-broken-lr.test.ts",
  "test/training/hf-checkpoint.test.ts",
  "test/engines/vllm-reload-real.test.ts",
  "test/security/workspace-scored.test.ts",
  "test/control/run-loop.test.ts",
  "test/eval/real-harnesses.test.ts",
  "test/harness/call-classes.test.ts",
  "test/cli/failures.test.ts",
  "test/k8s/real-cluster.test.ts",
  "test/engines/vllm-real.test.ts",
  "test/model/hf-directory.test.ts",
  "test/engines/run-through-server.test.ts",
  "test/k8s/trainer-cluster.test.ts",
  "test/compiler/cli.test.ts",
  "test/synth/synth.test.ts",
];
