import { existsSync } from "node:fs";
import { defineConfig } from "vitest/config";
import { UNIT_FILES } from "./test/lanes/unit-files.js";

const missing = UNIT_FILES.filter((f) => !existsSync(f));
if (missing.length > 0) throw new Error(`test/lanes/unit-files.ts names files that do not exist: ${missing.join(", ")}`);

/** The unit lane: pure tests only, each process spawn or socket refused (test/lanes/unit-guard.ts). */
export default defineConfig({
  test: {
    include: [...UNIT_FILES],
    setupFiles: ["test/lanes/unit-guard.ts"],
    globalSetup: ["test/suite-hygiene.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
