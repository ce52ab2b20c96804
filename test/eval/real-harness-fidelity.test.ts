/**
 * `reins eval --json` through each real harness in a local sandbox (Claude Code also in podman):
 * the starter task is solved, and the fidelity report of every one shows the harness's calls with
 * every trained token checked against the ids the engine sampled, and none different.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findExecutable } from "../../src/runtime/sandbox/host/executables.js";
import { skipHarness, skipNote } from "../harness/scenario.js";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { evaluationYaml } from "./in-sandbox-run.js";

const skipPodman = !findExecutable("podman") && process.env.REINS_SKIP_PODMAN === "1";

const runs: [string, "local" | "podman"][] = [
  ["claude-code", "local"],
  ["codex", "local"],
  ["openclaw", "local"],
  ["claude-code", "podman"],
];

describe("the fidelity report of reins eval through the real harnesses", () => {
  for (const [harness, provider] of runs) {
    const skip = skipHarness(harness) || (provider === "podman" && skipPodman);
    it.skipIf(skip)(
      `${harness} in a ${provider} sandbox: solved, 0 of its trained tokens differ from the sampled ids${skipNote(harness)}`,
      () => {
        const dir = tempDir("reins-fidelity-eval-");
        const file = join(dir, "eval.yaml");
        const sandbox = provider === "podman" ? "{name: podman}" : "{provider: local, concurrency: 1}";
        writeFileSync(file, evaluationYaml({ harness, sandbox, attempts: 1 }));
        const r = reins(["eval", file, "--out", join(dir, "run"), "--json"], { timeout: 900_000 });
        expect(r.code, r.stderr).toBe(0);
        const out = JSON.parse(r.stdout);
        expect(out.meanReward, r.stdout).toBe(1);
        const f = out.fidelity.byHarness[harness];
        expect(f.calls).toBeGreaterThanOrEqual(2);
        expect(f.checkedTrainedTokens).toBeGreaterThan(0);
        expect(f.mismatchedTrainedTokens).toBe(0);
        expect(f.prefixBreaks).toBe(0);
        expect(f.storedPromptTokens).toBeGreaterThan(0);
        expect(f.proxyAddedMs.p50).toBeGreaterThanOrEqual(0);
      },
      900_000,
    );
  }
});
