// The real Claude Code harness, installed from npm (scripts/install-harnesses.sh), against the real proxy.
import { beforeAll, describe, expect, it } from "vitest";
import { describeRealHarness } from "./real-harness.js";
import { skipHarness, skipNote, describeRun, runScenario, type ScenarioResult } from "./scenario.js";

describeRealHarness({ harness: "claude-code", dialect: "anthropic-messages", model: "claude-sonnet-4-5" });

// Control for the egress check: with its opt-outs removed, Claude Code does try to reach
// api.anthropic.com (feature flags, bootstrap, event logging), and the recorder sees it.
describe.skipIf(skipHarness("claude-code"))(`claude-code without opt-outs${skipNote("claude-code")}`, () => {
  let run: ScenarioResult;
  beforeAll(async () => {
    run = await runScenario({ harness: "claude-code", label: "claude-code-no-opt-outs", adjust: (h) => ({ ...h, optOuts: {} }) });
  }, 600_000);

  it("tries other hosts, which the recorder sees and refuses", () => {
    expect(run.exit.exitCode, describeRun(run)).toBe(0);
    expect(run.egress.map((a) => a.target)).toContain("api.anthropic.com:443");
  });
});
