/**
 * An instruction is never read as an option. Tasks (and, in `reins synth`, a generator model) write
 * the instruction, and it is templated into the harness's argv: an instruction such as "--version"
 * or "-h" placed where a CLI still parses options would make Claude Code print its version and exit
 * 0, Codex run a subcommand ("review", "resume"), and so on. Every shipped harness puts it last,
 * after "--" (end of options), and the args reins adds (knobs, MCP) go before that "--"; the
 * compiler warns (InstructionReadAsOption, with a position and a hint) of a harness command that
 * leaves the instruction where options are parsed. Where the harnesses are installed, the real
 * Claude Code and Codex CLIs are started with such an instruction and must take it as the prompt.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ResolvedHarness } from "../../src/compiler/contract/plan.js";
import { validateSpecs } from "../../src/compiler/index.js";
import { buildLaunchPlan, type LaunchContext, type LaunchPlan, type LaunchRuntime } from "../../src/runtime/harness/launch-plan.js";
import { MARKER_FILE, planInstall, resolveCacheRoot } from "../../src/runtime/harness/install-paths.js";
import { HARNESS_NAMES, loadHarnessSpec } from "../harness/harness-spec.js";
import { tempDir } from "../temp.js";

const HOSTILE = ["--version", "-h", "--help", "--", "-p --dangerously-skip-permissions"];
const runtime: LaunchRuntime = { pathDirs: ["/cache/node/bin"], node: "/cache/node/bin/node", reinsAgent: "/reins/agent.mjs" };
const ctx = (instruction: string): LaunchContext => ({ instruction, workspace: "/w/task", baseUrl: "http://127.0.0.1:9", apiKey: "sk-1", home: "/w/home" });
const servers = [{ name: "tickets", url: "http://127.0.0.1:9/r/r-1/mcp/tickets", tools: null }];

function launch(harness: ResolvedHarness, c: LaunchContext, rt: LaunchRuntime = runtime): LaunchPlan {
  const r = buildLaunchPlan(harness, c, rt);
  if (!r.ok) throw new Error(`${r.problem.code}: ${r.problem.message}`);
  return r.value;
}

/** The instruction is the last argument, right after the argv's first "--". */
function expectOperand(argv: string[], instruction: string): void {
  expect(argv.at(-1)).toBe(instruction);
  expect(argv.at(-2)).toBe("--");
  expect(argv.indexOf("--")).toBe(argv.length - 2);
}

describe("the shipped harnesses take any instruction as the prompt", () => {
  for (const name of HARNESS_NAMES) {
    it.each(HOSTILE)(`${name}: %j is the last argument, after "--"`, (instruction) => {
      expectOperand(launch(loadHarnessSpec(name), ctx(instruction)).argv, instruction);
    });
  }

  it.each(HARNESS_NAMES)('%s: with every knob it declares and MCP servers, the added args go before the "--"', (name) => {
    const spec = loadHarnessSpec(name);
    const values = { systemPrompt: "-s", appendSystemPrompt: "--x", tools: spec.knobs?.tools?.names?.slice(0, 1), maxTurns: 2 };
    const knobValues = Object.fromEntries(Object.entries(values).filter(([k]) => spec.knobs?.[k as keyof typeof values]));
    const plain = launch(spec, ctx("--version")).argv;
    const argv = launch({ ...spec, knobValues }, { ...ctx("--version"), mcpServers: servers }).argv;
    expectOperand(argv, "--version");
    // Nothing the harness had before its "--" is lost or moved after it.
    expect(argv.slice(0, plain.length - 2)).toEqual(plain.slice(0, -2));
    if (name === "claude-code") expect(argv).toEqual(expect.arrayContaining(["--max-turns", "2", "--mcp-config", "--strict-mcp-config"]));
  });

  it('a command without "--" keeps the old order: added args at its end', () => {
    const harness: ResolvedHarness = { ...loadHarnessSpec("claude-code"), command: ["agent", "--prompt={{instruction}}"], knobValues: { maxTurns: 3 } };
    expect(launch(harness, ctx("-h")).argv).toEqual(["agent", "--prompt=-h", "--max-turns", "3"]);
  });
});

/** A project with one Evaluation and a Harness whose command is `command` (YAML flow list). */
function harnessProject(command: string): string {
  const dir = tempDir("reins-argv-");
  writeFileSync(
    join(dir, "eval.yaml"),
    `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: e}
spec:
  tasks: [{name: t}]
  harnesses: [{name: h}]
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: h}
spec:
  command: ${command}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec:
  instruction: "--version"
  verifier: {checks: [{fileExists: a.txt}]}
`,
  );
  return join(dir, "eval.yaml");
}

function argvWarnings(file: string) {
  return validateSpecs([file], { env: {} }).diagnostics.filter((d) => d.code === "InstructionReadAsOption");
}

describe("the compiler warns of an instruction where options are parsed", () => {
  it("a bare {{instruction}} argument: InstructionReadAsOption at that argument, with a hint", () => {
    const file = harnessProject('[agent, --model, m, "{{instruction}}"]');
    const [d, ...rest] = argvWarnings(file);
    expect(rest).toEqual([]);
    expect(d).toMatchObject({ code: "InstructionReadAsOption", severity: "warning", file, line: 12 });
    expect(d!.column).toBeGreaterThan(1);
    expect(d!.message).toContain("command[3]");
    expect(d!.hint).toContain('"--"');
    expect(argvWarnings(harnessProject('[agent, "{{{instruction}}}"]'))).toHaveLength(1);
    expect(argvWarnings(harnessProject('[agent, "{{instruction}} now"]'))).toHaveLength(1);
  });

  it.each([
    ['[agent, "--", "{{instruction}}"]', "after --"],
    ['[agent, "--prompt={{instruction}}"]', "bound to a flag"],
    ['[sh, -c, \'printf %s "$1" > a.txt\', writer, "{{instruction}}"]', "an operand of sh -c"],
    ['[bash, -ec, \'echo "$0"\', "{{instruction}}"]', "$0 of bash -ec"],
    ['[agent, "Task: {{instruction}}"]', "not at the start of its argument"],
  ])("no warning for %s (%s)", (command) => {
    expect(argvWarnings(harnessProject(command))).toEqual([]);
  });

  it("the shipped library has no such harness", () => {
    const r = validateSpecs(["specs"], { env: {} });
    expect(r.diagnostics.filter((d) => d.code === "InstructionReadAsOption")).toEqual([]);
  });
});

// ── the real CLIs, where scripts/install-harnesses.sh installed them ──

function installed(name: string): LaunchRuntime | undefined {
  const layout = planInstall(loadHarnessSpec(name).install ?? {}, resolveCacheRoot());
  if (!layout.ok || !existsSync(join(layout.value.dir, MARKER_FILE)) || !existsSync(layout.value.bin)) return undefined;
  const node = layout.value.node?.bin ?? process.execPath;
  if (!existsSync(node)) return undefined;
  return { pathDirs: [dirname(node), dirname(layout.value.bin)], node, reinsAgent: "/nonexistent", bin: layout.value.bin };
}

/**
 * Starts the launch plan (model unreachable: a refused loopback port) and returns its first line of
 * stdout, killing it then or after `ms`.
 */
function firstLine(plan: LaunchPlan, ms = 60_000): Promise<string> {
  for (const f of plan.homeFiles) {
    mkdirSync(dirname(f.path), { recursive: true });
    writeFileSync(f.path, f.content);
  }
  mkdirSync(plan.cwd, { recursive: true });
  return new Promise((resolve) => {
    const child = spawn(plan.argv[0]!, plan.argv.slice(1), { cwd: plan.cwd, env: plan.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let out = "";
    let err = "";
    const done = () => {
      clearTimeout(timer);
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
      resolve(out.includes("\n") ? out.slice(0, out.indexOf("\n")) : `${out}${err}`);
    };
    const timer = setTimeout(done, ms);
    child.stdout.on("data", (d: Buffer) => {
      out += d;
      if (out.includes("\n")) done();
    });
    child.stderr.on("data", (d: Buffer) => (err += d));
    child.on("close", done);
  });
}

describe('the installed CLIs take "--version" as the prompt', () => {
  // First stdout line with the instruction as the prompt: a JSON event of a started session.
  const cases = [
    { name: "claude-code", started: /"type":"system".*"subtype":"init"/, version: /\(Claude Code\)/ },
    { name: "codex", started: /"type":"thread\.started"/, version: /codex-cli/ },
  ];
  for (const c of cases) {
    const rt = installed(c.name);
    it.skipIf(!rt)(
      `${c.name}${rt ? "" : " (skipped: not installed; scripts/install-harnesses.sh)"}`,
      async () => {
        const dir = tempDir(`reins-argv-${c.name}-`);
        const plan = launch(
          loadHarnessSpec(c.name),
          { instruction: "--version", workspace: join(dir, "w"), baseUrl: "http://127.0.0.1:9", apiKey: "sk-1", home: join(dir, "home") },
          rt!,
        );
        const line = await firstLine(plan);
        expect(line).not.toMatch(c.version);
        expect(line).toMatch(c.started);
        // Control: without the "--", the same CLI reads the instruction as its --version option.
        const bare = { ...plan, argv: plan.argv.filter((a, i) => !(a === "--" && i === plan.argv.length - 2)) };
        expect(await firstLine(bare)).toMatch(c.version);
      },
      120_000,
    );
  }
});
