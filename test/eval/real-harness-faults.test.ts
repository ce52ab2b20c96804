/**
 * A real harness failing inside a local sandbox, run by `reins eval` as a researcher runs it, is
 * handled the way reins-agent's failures are (test/executor/faults.test.ts, model-faults.test.ts):
 * - it hangs past the task's timeout: killed with everything it started, a task failure (reward 0);
 * - it crashes before its first model call (a bad argument added to its command by a Harness spec
 *   of the user's): an infrastructure failure, retried, then reported without a reward;
 * - the engine fails a call: the harness retries and the rollout is scored; a harness that gives
 *   up on it is an infrastructure failure (EngineUnavailable), retried, never a reward of 0.
 * What the harness printed in every try is kept in the run directory, harness-output/.
 * Claude Code plays the harness: it starts in about a second. One evaluation per script.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parse, stringify } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import type { RolloutResult } from "../../src/runtime/records/index.js";
import { REPO_ROOT, harnessSpecFile } from "../harness/harness-spec.js";
import { INSTRUCTION, skipHarness, skipNote } from "../harness/scenario.js";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const HANG_MARKER = "7352.5";

/** The shipped Claude Code spec under another name, changed by `change`: a Harness spec of the user's. */
function claudeCodeVariant(name: string, change: (spec: { command: string[]; env: Record<string, string> }) => void): string {
  const doc = parse(readFileSync(harnessSpecFile("claude-code"), "utf8")) as {
    metadata: { name: string };
    spec: { command: string[]; env: Record<string, string> };
  };
  doc.metadata.name = name;
  change(doc.spec);
  return stringify(doc);
}

function evaluation(o: { harnesses: string[]; script: string; timeoutSeconds: number; more?: string[] }): string {
  return [
    `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: faults}
spec:
  model: {name: m}
  tasks: [{labels: {suite: hello}}]
  harnesses: [${o.harnesses.map((h) => `{name: ${h}}`).join(", ")}]
  sandbox: {provider: local, concurrency: 2, retries: 1}
`,
    `apiVersion: reins/v1alpha1
kind: Model
metadata: {name: m}
spec:
  tokenizer: {type: qwen3}
  toolCallFormat: qwen3
  reasoning: {start: "<think>", end: "</think>"}
  stopTokens: ["<|im_end|>"]
  engine:
    type: scripted
    script:
${o.script}`,
    `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: hello, labels: {suite: hello}}
spec:
  instruction: ${INSTRUCTION}
  verifier: {checks: [{fileEquals: {path: hello.txt, content: "hi"}}]}
  timeoutSeconds: ${o.timeoutSeconds}
`,
    ...(o.more ?? []),
  ].join("---\n");
}

const WRITE = `      - text: I'll create the file now.
        toolCalls: [{name: Write, arguments: {file_path: hello.txt, content: hi}}]
      - text: Created hello.txt containing "hi".
`;

interface EvalRun {
  dir: string;
  exitCode: number | null;
  summary: Record<string, unknown> & { infraFailures: number; timeouts: number; errors: number };
  results: RolloutResult[];
  calls: { rolloutId: string; error?: { kind: string } }[];
  output: (file: string) => string;
  outputs: () => string[];
  stderr: string;
}

function reinsEval(yaml: string): EvalRun {
  const project = tempDir("reins-faults-");
  writeFileSync(path.join(project, "eval.yaml"), yaml);
  const dir = path.join(project, "run");
  const started = Date.now();
  const r = reins(["eval", path.join(project, "eval.yaml"), "--project-root", project, "--out", dir, "--json", "--quiet"], {
    cwd: REPO_ROOT,
    timeout: 300_000,
  });
  console.info(`reins eval of ${yaml.match(/harnesses: \[(.*)\]/)![1]}: ${Date.now() - started} ms`);
  const lines = (file: string) =>
    readFileSync(path.join(dir, file), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  return {
    dir,
    exitCode: r.code,
    summary: JSON.parse(r.stdout),
    results: lines("rollouts.jsonl") as RolloutResult[],
    calls: lines("calls.jsonl"),
    output: (file) => readFileSync(path.join(dir, "harness-output", file), "utf8"),
    outputs: () => readdirSync(path.join(dir, "harness-output")).sort(),
    stderr: r.stderr,
  };
}

function processesWith(marker: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (cmd.includes(marker)) out.push(`${pid}: ${cmd.replaceAll("\0", " ")}`);
    } catch {
      /* gone */
    }
  }
  return out;
}

describe.skipIf(skipHarness("claude-code"))(`claude-code failing inside a local sandbox${skipNote("claude-code")}`, () => {
  let hang: EvalRun;
  let faults: EvalRun;
  beforeAll(() => {
    // The policy runs a command that never ends; the task allows 30 s.
    hang = reinsEval(
      evaluation({
        harnesses: ["claude-code"],
        timeoutSeconds: 30,
        script: `      - text: Waiting.
        toolCalls: [{name: Bash, arguments: {command: "python3 -c 'import time; time.sleep(${HANG_MARKER})'"}}]
      - text: done
`,
      }),
    );
    // The engine fails the first call of every try. claude-code retries it; claude-code-impatient
    // (no retries) gives up; claude-code-broken never gets that far.
    faults = reinsEval(
      evaluation({
        harnesses: ["claude-code", "claude-code-impatient", "claude-code-broken"],
        timeoutSeconds: 120,
        script: `      - fault: engine-error\n${WRITE}`,
        more: [
          claudeCodeVariant("claude-code-impatient", (s) => (s.env.CLAUDE_CODE_MAX_RETRIES = "0")),
          // The bad option goes before the "--" that ends options: after it, it would be a prompt word.
          claudeCodeVariant("claude-code-broken", (s) => s.command.splice(s.command.indexOf("--"), 0, "--no-such-option")),
        ],
      }),
    );
  }, 600_000);

  const result = (run: EvalRun, harness: string) => run.results.find((r) => r.harness === harness)!;

  it("a harness that hangs is killed at the task's timeout with everything it started, and scores 0", () => {
    expect(hang.exitCode, hang.stderr).toBe(0);
    const r = result(hang, "claude-code");
    expect([r.status, r.reward, r.tries, r.error?.code], JSON.stringify(r)).toEqual(["timeout", 0, 1, "RolloutTimeout"]);
    expect(r.harnessExit).toMatchObject({ timedOut: true });
    // It was killed while running the command the policy asked for, and nothing of it is left.
    expect(hang.calls.filter((c) => c.rolloutId === r.id).length).toBeGreaterThanOrEqual(1);
    expect(processesWith(HANG_MARKER)).toEqual([]);
    expect(hang.summary).toMatchObject({ timeouts: 1, infraFailures: 0, errors: 0, meanReward: 0 });
    // What it printed until it was killed is kept.
    expect(hang.output(`${r.id}.stdout`)).toContain(HANG_MARKER);
  });

  it("a harness that crashes before its first call is retried, then reported without a reward, its output kept for each try", () => {
    const r = result(faults, "claude-code-broken");
    expect([r.status, r.reward, r.tries], JSON.stringify(r)).toEqual(["infra-failed", null, 2]);
    expect(r.retries.map((x) => x.code)).toEqual(["HarnessCrashedEarly", "HarnessCrashedEarly"]);
    expect(r.error?.message).toContain("unknown option '--no-such-option'");
    expect(r.error?.message).toContain(`harness-output/${r.id}.t2.stderr`);
    for (const tryId of [r.id, `${r.id}.t2`]) expect(faults.output(`${tryId}.stderr`)).toContain("unknown option '--no-such-option'");
  });

  it("an engine error the harness retries is recorded on its call, and the rollout is scored", () => {
    const r = result(faults, "claude-code");
    expect([r.status, r.reward, r.tries], JSON.stringify(r)).toEqual(["ok", 1, 1]);
    const calls = faults.calls.filter((c) => c.rolloutId === r.id);
    expect(calls[0]?.error?.kind).toBe("engine");
    expect(calls.slice(1).every((c) => c.error === undefined)).toBe(true);
  });

  it("an engine error the harness gives up on is an infrastructure failure, retried, never a reward of 0", () => {
    const r = result(faults, "claude-code-impatient");
    expect([r.status, r.reward, r.tries], JSON.stringify(r)).toEqual(["infra-failed", null, 2]);
    expect(r.retries.map((x) => x.code)).toEqual(["EngineUnavailable", "EngineUnavailable"]);
    expect(faults.output(`${r.id}.t2.stdout`)).toContain("API Error: 500");
  });

  it("the evaluation goes on and counts only what was scored", () => {
    expect(faults.exitCode, faults.stderr).toBe(0);
    expect(faults.summary).toMatchObject({ rollouts: 3, errors: 2, infraFailures: 2, meanReward: 1 });
    expect(faults.outputs()).toEqual(
      faults.results
        .flatMap((r) => Array.from({ length: r.tries }, (_, i) => (i === 0 ? r.id : `${r.id}.t${i + 1}`)))
        .flatMap((id) => [`${id}.stderr`, `${id}.stdout`])
        .sort(),
    );
  });
});
