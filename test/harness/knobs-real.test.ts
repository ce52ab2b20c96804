// Harness knobs take effect in the real harnesses: each installed harness runs once against the real
// proxy and scripted engine with the knobs an Experiment would set, and the prompt the engine saw
// (decoded from the recorded ids) shows them: the system prompt replaced or extended, only the chosen
// tools offered, the run stopped after maxTurns model calls.
import { beforeAll, describe, expect, it } from "vitest";
import type { HarnessKnobValues } from "../../src/compiler/contract/plan.js";
import { loadTokenizer, type Tokenizer } from "../../src/runtime/model/tokenizer.js";
import { describeRun, runScenario, skipHarness, skipNote, type ScenarioResult } from "./scenario.js";

const PROMPT = "You write files for a grader. Do the task with the one tool you have, then reply done.";
const APPENDED = "Knob check: answer in English.";

interface Seen {
  run: ScenarioResult;
  /** The first call's prompt as the engine saw it (Qwen3 chat template). */
  prompt: string;
  /** The system turn of that prompt. */
  system: string;
  /** Tool names in the prompt's <tools> block. */
  tools: string[];
}

let tokenizer: Tokenizer;

async function runWith(harness: string, knobValues: HarnessKnobValues): Promise<Seen> {
  tokenizer ??= await loadTokenizer({ type: "qwen3" });
  const run = await runScenario({ harness, label: `knobs-${harness}`, adjust: (h) => ({ ...h, knobValues }) });
  const prompt = run.records[0] ? tokenizer.decode(run.records[0].promptIds) : "";
  const system = prompt.split("<|im_start|>system\n")[1]?.split("<|im_end|>")[0] ?? "";
  const block = prompt.split("<tools>\n")[1]?.split("\n</tools>")[0] ?? "";
  const tools = block
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { function: { name: string } }).function.name);
  return { run, prompt, system, tools };
}

describe(`Claude Code with systemPrompt, tools and maxTurns${skipNote("claude-code")}`, () => {
  let seen: Seen;
  beforeAll(async () => {
    if (!skipHarness("claude-code")) seen = await runWith("claude-code", { systemPrompt: PROMPT, tools: ["Write"], maxTurns: 1 });
  }, 300_000);

  it.skipIf(skipHarness("claude-code"))("sends the given system prompt instead of its own, offers only Write, and stops after one call", () => {
    const { run, system, tools } = seen;
    expect(system, describeRun(run)).toContain(PROMPT);
    expect(seen.prompt).not.toContain("You are an agent working with the user toward their goals");
    expect(tools).toEqual(["Write"]);
    // The script's first turn calls Write; its second turn would answer. One turn allowed: no second call.
    expect(run.records.length, describeRun(run)).toBe(1);
    expect(run.hello).toBe("hi");
  });
});

describe(`reins-agent with every knob`, () => {
  let seen: Seen;
  beforeAll(async () => {
    seen = await runWith("reins-agent", { systemPrompt: PROMPT, appendSystemPrompt: APPENDED, tools: ["write_file"], maxTurns: 1 });
  }, 120_000);

  it("sends the given system prompt with the appended text, offers only write_file, and stops after one call", () => {
    const { run, system, tools } = seen;
    expect(system.startsWith(`${PROMPT}\n\n${APPENDED}`), describeRun(run)).toBe(true);
    expect(seen.prompt).not.toContain("You are an autonomous software agent");
    expect(tools).toEqual(["write_file"]);
    expect(run.records.length, describeRun(run)).toBe(1);
    expect(run.exit.exitCode).toBe(3); // out of turns
  });
});

describe(`Codex with systemPrompt, appendSystemPrompt and tools${skipNote("codex")}`, () => {
  let seen: Seen;
  beforeAll(async () => {
    if (!skipHarness("codex")) seen = await runWith("codex", { systemPrompt: PROMPT, appendSystemPrompt: APPENDED, tools: ["exec_command"] });
  }, 300_000);

  it.skipIf(skipHarness("codex"))("sends the given instructions instead of its own, the appended text after them, and only its shell tools", () => {
    const { run, system, tools } = seen;
    expect(tools.sort(), describeRun(run)).toEqual(["exec_command", "write_stdin"]);
    expect(system.startsWith(PROMPT), describeRun(run)).toBe(true);
    expect(seen.prompt).not.toContain("You are a coding agent running in the Codex CLI");
    expect(seen.prompt.indexOf(APPENDED)).toBeGreaterThan(seen.prompt.indexOf(PROMPT));
    expect(run.hello).toBe("hi");
  });
});

describe(`OpenClaw with tools${skipNote("openclaw")}`, () => {
  let seen: Seen;
  beforeAll(async () => {
    if (!skipHarness("openclaw")) seen = await runWith("openclaw", { tools: ["write"] });
  }, 300_000);

  it.skipIf(skipHarness("openclaw"))("offers only the write tool (no apply_patch, no tool search) and still does the task", () => {
    const { run, tools } = seen;
    expect(tools, describeRun(run)).toEqual(["write"]);
    expect(run.hello).toBe("hi");
  });
});
