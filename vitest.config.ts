import { existsSync } from "node:fs";
import { defineConfig } from "vitest/config";
import { SlowFirstSequencer } from "./test/lanes/sequencer.js";
import { SLOW_FILES } from "./test/lanes/slow-files.js";

const missing = SLOW_FILES.filter((f) => !existsSync(f));
if (missing.length > 0) throw new Error(`test/lanes/slow-files.ts names files that do not exist: ${missing.join(", ")}`);

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // A private TMPDIR for the suite; it fails when a test leaves a directory or a process behind.
    globalSetup: ["test/suite-hygiene.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 2,
    // The slowest files first (test/lanes/slow-files.ts), so that none of them starts last.
    sequence: { sequencer: SlowFirstSequencer },
  },
});
