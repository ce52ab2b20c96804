/**
 * Side calls of the real harnesses, provoked on purpose and classified by the rules in their
 * shipped specs (specs/harnesses/<name>.yaml `callClasses`): Claude Code's subagents (Agent tool,
 * foreground, background and fork), its compaction and its mid-conversation system messages, Codex's compaction, OpenClaw's compaction summary. Each run goes through the
 * real proxy with a scripted engine that answers side calls from their own script (see
 * side-call-engine.ts), so the run completes as it would with a real model; then the default
 * trajectory filters must drop every side call's branch and keep every main call. What each
 * harness does not do (titles, quota probes, ctx/msg roles) is in docs/call-classes.md.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { ResolvedHarness, ScriptedTurn } from "../../src/compiler/contract/plan.js";
import type { CallRecord } from "../../src/runtime/records/index.js";
import { defaultAlgorithm } from "../../src/compiler/index.js";
import { analyzeRollout } from "../../src/runtime/trajectories/index.js";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { describeRun, runScenario, scriptedModel, skipHarness, skipNote, type ScenarioResult } from "./scenario.js";
import { createSideCallEngine, tailIncludes, type SideRoute } from "./side-call-engine.js";
import { linkCalls } from "./prefix.js";

const filters = defaultAlgorithm().filters;

interface Capture {
  run: ScenarioResult;
  /** Per engine call, in order: the route that answered it ("main" or a route name). */
  routed: string[];
}

async function capture(
  harness: string,
  label: string,
  main: ScriptedTurn[],
  routes: SideRoute[],
  adjust?: (h: ResolvedHarness) => ResolvedHarness,
  timeoutMs?: number,
): Promise<Capture> {
  const model = scriptedModel(harness);
  const engine = await createSideCallEngine(model, main, routes);
  const proxy = await startProxy({ model, engine });
  try {
    const run = await runScenario({ harness, label, proxy, ...(adjust ? { adjust } : {}), ...(timeoutMs ? { timeoutMs } : {}) });
    return { run, routed: engine.routed };
  } finally {
    await proxy.close();
  }
}

/**
 * The subagent scenarios put back Claude Code's billing line (the shipped spec turns it off so that
 * rollouts share their prompt prefix): its `cc_is_subagent=true` is how the scripted engine knows
 * which script answers a request. The classification itself reads the subagent header only.
 */
const withBillingLine = (h: ResolvedHarness): ResolvedHarness => ({ ...h, env: { ...h.env, CLAUDE_CODE_ATTRIBUTION_HEADER: "1" } });

/** Replaces text in the harness's home files, failing loudly when the text is not there. */
function editHomeFiles(h: ResolvedHarness, edits: [string, string][]): ResolvedHarness {
  const all = h.homeFiles.map((f) => f.content).join("\n");
  for (const [from] of edits) if (!all.includes(from)) throw new Error(`home files of ${h.name} do not contain ${JSON.stringify(from)}`);
  return { ...h, homeFiles: h.homeFiles.map((f) => ({ ...f, content: edits.reduce((c, [from, to]) => c.replace(from, to), f.content) })) };
}

function classes(records: CallRecord[]): string[] {
  return records.map((r) => r.callClass);
}

/** The default filters keep exactly the main calls, drop every side call by its class, and train exactly the main completions. */
function expectSideCallsDropped(records: CallRecord[], why: string): void {
  const a = analyzeRollout(records[0]!.rolloutId, records, filters);
  a.tree.calls.forEach((call, k) => {
    expect(a.filter.callDrop[k], `${why}\ncall #${call.seq} (${call.callClass})`).toBe(call.callClass === "main" ? null : "class");
  });
  const side = records.filter((r) => r.callClass !== "main");
  expect(side.length, why).toBeGreaterThan(0);
  expect(a.stats.droppedDeadLeaves, why).toBe(0);
  // Side completions are generated but not trained; main completions are trained once each.
  const mainTokens = records.filter((r) => r.callClass === "main").reduce((n, r) => n + r.completionIds.length, 0);
  expect(a.stats.trainedTokens, why).toBe(mainTokens);
  expect(a.stats.generatedTokens, why).toBeGreaterThan(a.stats.trainedTokens);
}

describe.skipIf(skipHarness("claude-code"))(`claude-code side calls${skipNote("claude-code")}`, () => {
  describe("a subagent (Agent tool, foreground)", () => {
    let c: Capture;
    beforeAll(async () => {
      const main: ScriptedTurn[] = [
        {
          text: "I'll ask a subagent.",
          toolCalls: [
            {
              name: "Agent",
              arguments: {
                description: "Create hello file",
                prompt: "Create a file hello.txt containing hi.",
                subagent_type: "general-purpose",
                run_in_background: false,
              },
            },
          ],
        },
        { text: "The subagent created hello.txt." },
      ];
      const sub: SideRoute = {
        name: "subagent",
        accepts: (p) => p.includes("cc_is_subagent=true"),
        script: [
          { text: "Writing it.", toolCalls: [{ name: "Write", arguments: { file_path: "hello.txt", content: "hi" } }] },
          { text: "Created hello.txt containing hi." },
        ],
      };
      c = await capture("claude-code", "classes-claude-subagent", main, [sub], withBillingLine);
    }, 300_000);

    it("runs the subagent's two calls between the two main calls, classed subagent", () => {
      expect(c.run.exit.exitCode, describeRun(c.run)).toBe(0);
      expect(c.run.hello, describeRun(c.run)).toBe("hi");
      expect(c.routed).toEqual(["main", "subagent", "subagent", "main"]);
      expect(classes(c.run.records), describeRun(c.run)).toEqual(["main", "subagent", "subagent", "main"]);
    });

    it("the subagent's conversation is its own branch; the main calls still chain", () => {
      const [m1, s1, s2, m2] = c.run.records;
      expect(linkCalls(m1!, m2!).extends).toBe(true);
      expect(linkCalls(s1!, s2!).extends).toBe(true);
      expect(linkCalls(m1!, s1!).divergesIn).toBe("prompt");
    });

    it("the default filters drop the subagent branch and train the main path only", () => {
      expectSideCallsDropped(c.run.records, describeRun(c.run));
      const a = analyzeRollout(c.run.records[0]!.rolloutId, c.run.records, filters);
      expect(a.stats.leavesBefore).toBe(2);
      expect(a.stats.leaves).toBe(1);
      expect(a.stats.droppedBranches).toBe(1);
    });
  });

  describe("a fork subagent (subagent_type: fork, which inherits the whole conversation)", () => {
    let c: Capture;
    beforeAll(async () => {
      const main: ScriptedTurn[] = [
        {
          text: "Forking.",
          toolCalls: [
            {
              name: "Agent",
              arguments: {
                description: "Create hello file",
                prompt: "Create a file hello.txt containing hi.",
                subagent_type: "fork",
                run_in_background: false,
              },
            },
          ],
        },
        { text: "The fork created hello.txt." },
      ];
      const sub: SideRoute = {
        name: "subagent",
        accepts: (p) => p.includes("cc_is_subagent=true"),
        script: [{ text: "Writing.", toolCalls: [{ name: "Write", arguments: { file_path: "hello.txt", content: "hi" } }] }, { text: "Created hello.txt." }],
      };
      c = await capture("claude-code", "classes-claude-fork-subagent", main, [sub], withBillingLine);
    }, 300_000);

    it("re-sends the main conversation under a subagent's first system line, so it branches at once and is classed subagent", () => {
      expect(c.run.exit.exitCode, describeRun(c.run)).toBe(0);
      expect(c.run.hello, describeRun(c.run)).toBe("hi");
      expect(classes(c.run.records), describeRun(c.run)).toEqual(["main", "subagent", "subagent", "main"]);
      const [m1, s1] = c.run.records;
      expect(linkCalls(m1!, s1!).sharedPrefix).toBeLessThan(100);
      expectSideCallsDropped(c.run.records, describeRun(c.run));
    });
  });

  describe("a background subagent (the Agent tool's default)", () => {
    let c: Capture;
    beforeAll(async () => {
      const main: ScriptedTurn[] = [
        {
          text: "Delegating.",
          toolCalls: [{ name: "Agent", arguments: { description: "Create hello file", prompt: "Create a file hello.txt containing hi." } }],
        },
        { text: "Started the agent." },
        { text: "The agent created hello.txt." },
      ];
      const sub: SideRoute = {
        name: "subagent",
        accepts: (p) => p.includes("cc_is_subagent=true"),
        script: [{ text: "Writing.", toolCalls: [{ name: "Write", arguments: { file_path: "hello.txt", content: "hi" } }] }, { text: "Created hello.txt." }],
      };
      c = await capture("claude-code", "classes-claude-background-subagent", main, [sub], withBillingLine);
    }, 300_000);

    it("the main thread answers while the subagent works, then again on its completion notice; the subagent's calls are classed subagent", () => {
      expect(c.run.exit.exitCode, describeRun(c.run)).toBe(0);
      expect(c.run.hello, describeRun(c.run)).toBe("hi");
      const main = c.run.records.filter((r) => r.callClass === "main");
      expect(main.length, describeRun(c.run)).toBe(3);
      expect(c.run.records.filter((r) => r.callClass === "subagent").length, describeRun(c.run)).toBe(2);
      expect(c.routed.filter((r) => r === "subagent").length).toBe(2);
      expect(linkCalls(main[0]!, main[1]!).extends).toBe(true);
      expect(linkCalls(main[1]!, main[2]!).extends).toBe(true);
    });

    it("the default filters drop the subagent branch and train the main path only", () => {
      expectSideCallsDropped(c.run.records, describeRun(c.run));
      const a = analyzeRollout(c.run.records[0]!.rolloutId, c.run.records, filters);
      expect(a.stats.leaves).toBe(1);
      expect(a.stats.droppedBranches).toBe(1);
    });
  });

  describe("auto-compaction (CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000, CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=30)", () => {
    let c: Capture;
    beforeAll(async () => {
      const main: ScriptedTurn[] = [
        { text: "Listing.", toolCalls: [{ name: "Bash", arguments: { command: "seq 1 1500", description: "Print numbers" } }] },
        { text: "Writing.", toolCalls: [{ name: "Write", arguments: { file_path: "hello.txt", content: "hi" } }] },
        { text: "Created hello.txt." },
      ];
      const summary: ScriptedTurn = {
        text: "<analysis>Numbers listed.</analysis>\n<summary>1. Primary Request and Intent: create hello.txt containing hi. Numbers 1-1500 were listed.</summary>",
      };
      const compaction: SideRoute = { name: "compaction", accepts: tailIncludes("REMINDER: Do NOT call any tools"), script: [summary, summary, summary] };
      c = await capture("claude-code", "classes-claude-compaction", main, [compaction], (h) => ({
        ...h,
        env: { ...h.env, CLAUDE_CODE_AUTO_COMPACT_WINDOW: "100000", CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: "30" },
      }));
    }, 300_000);

    it("compacts once the conversation passes the threshold, and the compaction call is classed compaction", () => {
      expect(c.run.exit.exitCode, describeRun(c.run)).toBe(0);
      expect(c.run.hello, describeRun(c.run)).toBe("hi");
      const compactions = c.routed.filter((r) => r === "compaction").length;
      expect(compactions, describeRun(c.run)).toBeGreaterThanOrEqual(1);
      expect(classes(c.run.records).filter((k) => k === "compaction").length, describeRun(c.run)).toBe(compactions);
      expect(classes(c.run.records).filter((k) => k === "main").length, describeRun(c.run)).toBe(3);
    });

    it("the compaction call re-sends the main conversation (same system prompt and tools, so noTools cannot tell it)", () => {
      const compaction = c.run.records.find((r) => r.callClass === "compaction")!;
      expect(linkCalls(c.run.records[0]!, compaction).extends, describeRun(c.run)).toBe(true);
    });

    it("the default filters drop the compaction branch and keep every main call", () => {
      expectSideCallsDropped(c.run.records, describeRun(c.run));
    });
  });

  describe("mid-conversation system messages (CLAUDE_CODE_FORCE_MID_CONVERSATION_SYSTEM=1)", () => {
    let run: ScenarioResult;
    beforeAll(async () => {
      run = await runScenario({
        harness: "claude-code",
        label: "classes-claude-system-role",
        adjust: (h) => ({ ...h, env: { ...h.env, CLAUDE_CODE_FORCE_MID_CONVERSATION_SYSTEM: "1" } }),
      });
    }, 300_000);

    it("role: system messages inside `messages` are accepted, rendered as system turns, and the calls stay main and chain", async () => {
      expect(run.exit.exitCode, describeRun(run)).toBe(0);
      expect(run.hello, describeRun(run)).toBe("hi");
      expect(classes(run.records)).toEqual(["main", "main"]);
      expect(linkCalls(run.records[0]!, run.records[1]!).extends).toBe(true);
      const runtime = await loadModelRuntime(scriptedModel("claude-code"));
      const text = runtime.tokenizer.decode(run.records[1]!.promptIds);
      expect(text.split("<|im_start|>system").length - 1).toBeGreaterThan(1);
    });
  });
});

describe.skipIf(skipHarness("codex"))(`codex side calls${skipNote("codex")}`, () => {
  describe("auto-compaction (model_auto_compact_token_limit = 9500)", () => {
    let c: Capture;
    beforeAll(async () => {
      const main: ScriptedTurn[] = [
        { text: "Listing.", toolCalls: [{ name: "exec_command", arguments: { cmd: "seq 1 600" } }] },
        { text: "Writing.", toolCalls: [{ name: "exec_command", arguments: { cmd: "printf hi > hello.txt" } }] },
        { text: "Created hello.txt." },
      ];
      const compaction: SideRoute = {
        name: "compaction",
        accepts: tailIncludes("CONTEXT CHECKPOINT COMPACTION"),
        script: [{ text: "Listed 1-600 and wrote hello.txt containing hi." }],
      };
      c = await capture("codex", "classes-codex-compaction", main, [compaction], (h) =>
        editHomeFiles(h, [['model_reasoning_effort = "low"\n', 'model_reasoning_effort = "low"\nmodel_auto_compact_token_limit = 9500\n']]),
      );
    }, 300_000);

    it("compacts mid-turn once usage passes the limit, and the compaction call is classed compaction", () => {
      expect(c.run.exit.exitCode, describeRun(c.run)).toBe(0);
      expect(c.run.hello, describeRun(c.run)).toBe("hi");
      expect(c.routed).toEqual(["main", "main", "compaction", "main"]);
      expect(classes(c.run.records), describeRun(c.run)).toEqual(["main", "main", "compaction", "main"]);
    });

    it("the default filters drop the compaction branch and keep every main call", () => {
      expectSideCallsDropped(c.run.records, describeRun(c.run));
    });
  });
});

describe.skipIf(skipHarness("openclaw"))(`openclaw side calls${skipNote("openclaw")}`, () => {
  describe("compaction before the next model call (contextWindow 24000, compaction.midTurnPrecheck, keepRecentTokens 2000)", () => {
    let c: Capture;
    beforeAll(async () => {
      const main: ScriptedTurn[] = [
        { text: "Listing.", toolCalls: [{ name: "exec", arguments: { command: "seq 1 1000" } }] },
        { text: "More.", toolCalls: [{ name: "exec", arguments: { command: "seq 1001 2000" } }] },
        { text: "Writing.", toolCalls: [{ name: "write", arguments: { path: "hello.txt", content: "hi" } }] },
        { text: "Created hello.txt." },
      ];
      const summary: ScriptedTurn = { text: "## Goal\nCreate hello.txt containing hi.\n\n## Progress\nListed numbers 1 to 2000." };
      const compaction: SideRoute = {
        name: "compaction",
        accepts: (p) => p.includes("You are a context summarization assistant"),
        script: [summary, summary, summary],
      };
      c = await capture(
        "openclaw",
        "classes-openclaw-compaction",
        main,
        [compaction],
        (h) =>
          editHomeFiles(h, [
            ['"contextWindow": 128000', '"contextWindow": 24000'],
            ['"maxTokens": 8000', '"maxTokens": 2000'],
            [
              '"model": { "primary": "reins/{{model}}" } }',
              '"model": { "primary": "reins/{{model}}" }, "compaction": { "mode": "default", "keepRecentTokens": 2000, "midTurnPrecheck": { "enabled": true } } }',
            ],
          ]),
        240_000,
      );
    }, 300_000);

    it("summarizes the conversation in a tool-less call, classed compaction, then finishes the task", () => {
      expect(c.run.exit.exitCode, describeRun(c.run)).toBe(0);
      expect(c.run.hello, describeRun(c.run)).toBe("hi");
      const compactions = c.routed.filter((r) => r === "compaction").length;
      expect(compactions, describeRun(c.run)).toBeGreaterThanOrEqual(1);
      expect(classes(c.run.records).filter((k) => k === "compaction").length, describeRun(c.run)).toBe(compactions);
      expect(classes(c.run.records).filter((k) => k === "main").length, describeRun(c.run)).toBe(4);
    });

    it("the default filters drop the compaction branch and keep every main call", () => {
      expectSideCallsDropped(c.run.records, describeRun(c.run));
    });
  });
});
