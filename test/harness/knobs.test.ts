// Harness knobs: what an Experiment's or Evaluation's harnesses[] entry sets (systemPrompt,
// appendSystemPrompt, tools, maxTurns) compiles into the plan and becomes each shipped harness's own
// flags, environment or config file when it is launched.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { HarnessKnobValues, ResolvedHarness } from "../../src/compiler/contract/plan.js";
import { compilePlan } from "../../src/compiler/index.js";
import { buildLaunchPlan, type LaunchContext, type LaunchRuntime } from "../../src/runtime/harness/launch-plan.js";
import { tempDir } from "../temp.js";
import { loadHarnessSpec } from "./harness-spec.js";

const ctx: LaunchContext = {
  instruction: "Create a file hello.txt containing hi",
  workspace: "/w/task",
  baseUrl: "http://127.0.0.1:4000/r/r-1",
  apiKey: "sk-1",
  home: "/w/home",
};
const runtime: LaunchRuntime = { pathDirs: ["/cache/node/bin"], node: "/cache/node/bin/node", reinsAgent: "/reins/agent.mjs" };
const PROMPT = 'Do the task with the Write tool, then reply "done". {{not a template}} ${HOME}';

function launch(name: string, knobValues?: HarnessKnobValues) {
  const harness: ResolvedHarness = { ...loadHarnessSpec(name), ...(knobValues ? { knobValues } : {}) };
  const r = buildLaunchPlan(harness, ctx, runtime);
  if (!r.ok) throw new Error(`${r.problem.code}: ${r.problem.message}`);
  return r.value;
}

describe("shipped harness specs apply their knobs", () => {
  it('Claude Code: its own flags after the command\'s options (before its "--" and the instruction), the prompt verbatim as one argument, tools comma-joined', () => {
    const base = launch("claude-code").argv;
    const options = base.slice(0, -2);
    expect(base.slice(-2)).toEqual(["--", ctx.instruction]);
    const plan = launch("claude-code", { systemPrompt: PROMPT, appendSystemPrompt: "Be brief.", tools: ["Write", "Read"], maxTurns: 3 });
    expect(plan.argv.slice(0, options.length)).toEqual(options);
    expect(plan.argv.slice(options.length)).toEqual([
      "--system-prompt",
      PROMPT,
      "--append-system-prompt",
      "Be brief.",
      "--tools",
      "Write,Read",
      "--max-turns",
      "3",
      "--",
      ctx.instruction,
    ]);
    expect(launch("claude-code", { maxTurns: 2 }).argv.slice(options.length)).toEqual(["--max-turns", "2", "--", ctx.instruction]);
  });

  it("reins-agent: its environment variables, over the spec's own REINS_MAX_TURNS", () => {
    expect(launch("reins-agent").env.REINS_MAX_TURNS).toBe("30");
    const plan = launch("reins-agent", { systemPrompt: PROMPT, appendSystemPrompt: "Be brief.", tools: ["write_file", "read_file"], maxTurns: 4 });
    expect(plan.env).toMatchObject({
      REINS_SYSTEM_PROMPT: PROMPT,
      REINS_APPEND_SYSTEM_PROMPT: "Be brief.",
      REINS_TOOLS: "write_file,read_file",
      REINS_MAX_TURNS: "4",
    });
    expect(plan.argv).toEqual(launch("reins-agent").argv);
    expect(launch("reins-agent").env).not.toHaveProperty("REINS_TOOLS");
  });

  it("Codex: config.toml names an instructions file holding the prompt, and carries developer_instructions", () => {
    const unset = launch("codex");
    expect(unset.homeFiles[0]!.content).not.toMatch(/model_instructions_file|developer_instructions/);
    const append = 'Say "done" \\ then stop.\nReally.';
    const plan = launch("codex", { systemPrompt: PROMPT, appendSystemPrompt: append });
    const toml = plan.homeFiles[0]!.content;
    // Top-level keys, before the first table; the appended text as one basic string (JSON's escapes are TOML's).
    const line = (key: string) => toml.split("\n").find((l) => l.startsWith(`${key} = `))!;
    expect(toml.indexOf("developer_instructions")).toBeLessThan(toml.indexOf("["));
    expect(line("model_instructions_file")).toBe('model_instructions_file = "/w/home/.codex/reins-instructions.md"');
    expect(JSON.parse(line("developer_instructions").slice("developer_instructions = ".length))).toBe(append);
    expect(plan.homeFiles[1]).toEqual({ path: "/w/home/.codex/reins-instructions.md", content: PROMPT });
    expect(plan.argv).toEqual(unset.argv);
  });

  it("Codex: tools switch its tool features, a group on when any of its tools is named", () => {
    expect(launch("codex").homeFiles[0]!.content).not.toMatch(/shell_tool|view_image|multi_agent|goals|request_user_input/);
    const toml = launch("codex", { tools: ["exec_command", "update_goal"] }).homeFiles[0]!.content;
    const features = toml.slice(toml.indexOf("[features]"));
    for (const line of ["shell_tool = true", "view_image = false", "multi_agent = false", "goals = true"]) expect(features).toContain(`\n${line}\n`);
    expect(features).toContain("[tools.experimental_request_user_input]\nenabled = false\n");
    const asking = launch("codex", { tools: ["request_user_input"] }).homeFiles[0]!.content;
    expect(asking).toContain("shell_tool = false\n");
    expect(asking).toContain("[tools.experimental_request_user_input]\nenabled = true\n");
  });

  it("OpenClaw: the tools become its config's tools.allow, tool search off, apply_patch denied unless named; the config stays JSON", () => {
    expect(JSON.parse(launch("openclaw").homeFiles[0]!.content)).not.toHaveProperty("tools");
    const config = JSON.parse(launch("openclaw", { tools: ["write", "read"] }).homeFiles[0]!.content);
    expect(config.tools).toEqual({ allow: ["write", "read"], toolSearch: false, deny: ["apply_patch"] });
    expect(config.models.providers.reins.baseUrl).toBe("http://127.0.0.1:4000/r/r-1/v1");
    const patching = JSON.parse(launch("openclaw", { tools: ["apply_patch", "read"] }).homeFiles[0]!.content);
    expect(patching.tools).toEqual({ allow: ["apply_patch", "read"], toolSearch: false });
  });

  it("a knob the harness does not declare is refused at launch too (a plan edited by hand)", () => {
    const r = buildLaunchPlan({ ...loadHarnessSpec("openclaw"), knobValues: { maxTurns: 3 } }, ctx, runtime);
    expect(r.ok ? "" : r.problem.code).toBe("HarnessKnobUnsupported");
  });
});

function evaluation(dir: string, harness: string): string {
  const file = path.join(dir, "eval.yaml");
  writeFileSync(
    file,
    `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: e}
spec:
  model: {name: qwen3}
  tasks: [{name: t}]
  harnesses:
${harness}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec:
  instruction: x
  verifier: {checks: [{fileExists: a.txt}]}
`,
  );
  return file;
}

describe("knobs in the plan", () => {
  it("travel on the plan's harness and change the plan hash", () => {
    const dir = tempDir("reins-knobs-");
    mkdirSync(dir, { recursive: true });
    const compile = (harness: string) => {
      const r = compilePlan([evaluation(dir, harness)], { env: {}, cwd: dir });
      expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      return r.value!;
    };
    const plain = compile("    - name: claude-code");
    const small = compile("    - name: claude-code\n      systemPrompt: Do the task.\n      tools: [Write]\n      maxTurns: 3");
    const fewer = compile("    - name: claude-code\n      systemPrompt: Do the task.\n      tools: [Write]\n      maxTurns: 2");
    expect(plain.harnesses[0]!.knobValues).toBeUndefined();
    expect(small.harnesses[0]!.knobValues).toEqual({ systemPrompt: "Do the task.", tools: ["Write"], maxTurns: 3 });
    expect(small.harnesses[0]!.knobs?.tools?.args).toEqual(["--tools", '{{join value ","}}']);
    expect(new Set([plain.hash, small.hash, fewer.hash]).size).toBe(3);
    expect(small.steps[0]!.hash).not.toBe(plain.steps[0]!.hash);
  });
});
