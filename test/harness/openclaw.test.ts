// The real OpenClaw harness, installed from npm (scripts/install-harnesses.sh), against the real proxy.
import { beforeAll, describe, expect, it } from "vitest";
import type { ResolvedHarness } from "../../src/compiler/contract/plan.js";
import { explainLink, linkChain, mainCalls } from "./prefix.js";
import { writeSummary, describeRealHarness } from "./real-harness.js";
import { skipHarness, skipNote, describeRun, runScenario, type ScenarioResult } from "./scenario.js";

// The shipped spec speaks Responses, where OpenClaw's history is append-only.
describeRealHarness({ harness: "openclaw", dialect: "openai-responses", model: "reins-policy" });

/** The shipped spec switched to the chat dialect (OpenClaw's api "openai-completions"). */
function overChat(h: ResolvedHarness): ResolvedHarness {
  return {
    ...h,
    dialect: "openai-chat",
    homeFiles: h.homeFiles.map((f) => ({ ...f, content: f.content.replace('"api": "openai-responses"', '"api": "openai-completions"') })),
  };
}

// Why the shipped spec does not use chat: there OpenClaw keeps its internal-context user message
// last and inserts each new turn before it, so call 2 leaves call 1's prompt where that message
// starts. In the prefix tree both calls hang off the shared system + user prefix as siblings:
// call 1's completion is a leaf that no later call continues.
describe.skipIf(skipHarness("openclaw"))(`openclaw over chat: history rewritten before its context message${skipNote("openclaw")}`, () => {
  let run: ScenarioResult;
  beforeAll(async () => {
    run = await runScenario({ harness: "openclaw", label: "openclaw-chat", adjust: overChat });
    await writeSummary(run);
  }, 600_000);

  it("still completes the task", () => {
    expect(run.exit.exitCode, describeRun(run)).toBe(0);
    expect(run.hello, describeRun(run)).toBe("hi");
    expect(mainCalls(run.records).map((r) => r.finishReason)).toEqual(["tool_calls", "stop"]);
    expect(run.records.every((r) => r.dialect === "openai-chat")).toBe(true);
  });

  it("makes call 2 diverge inside call 1's prompt, at the trailing context message", async () => {
    const main = mainCalls(run.records);
    const [link] = linkChain(main);
    const why = await explainLink(main[0], main[1], link);
    expect(link.extends, why).toBe(false);
    expect(link.divergesIn, why).toBe("prompt");
    // Most of the prompt (system prompt, tools, the user's message) is still shared.
    expect(link.sharedPrefix / main[0].promptIds.length, why).toBeGreaterThan(0.5);
    expect(why).toContain("OPENCLAW_INTERNAL_CONTEXT");
  });
});
