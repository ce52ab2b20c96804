import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // A private TMPDIR for the suite; it fails when a test leaves a directory or a process behind.
    globalSetup: ["test/suite-hygiene.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
