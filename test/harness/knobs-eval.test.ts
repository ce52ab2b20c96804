// Knobs end to end: `reins eval` on an Evaluation whose harnesses[] entry sets reins-agent's system
// prompt, tools and turn limit; the plan carries them, the executor launches the harness in a local
// sandbox with them, and the recorded call shows them.
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadTokenizer } from "../../src/runtime/model/tokenizer.js";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { proxyExampleFile } from "./harness-spec.js";

const EVALUATION = `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: knobs}
spec:
  imports: [model.yaml]
  model: {name: scripted-reins-agent}
  tasks: [{name: hello}]
  harnesses:
    - name: reins-agent
      systemPrompt: Write the file, nothing else.
      tools: [write_file]
      maxTurns: 1
  sandbox: {provider: local}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: hello}
spec:
  instruction: Create a file hello.txt containing hi
  verifier: {checks: [{fileExists: hello.txt}]}
`;

describe("reins eval with harness knobs", () => {
  it("runs reins-agent with the Evaluation's system prompt, one tool and one turn", async () => {
    const dir = tempDir("reins-knobs-eval-");
    copyFileSync(proxyExampleFile("reins-agent"), join(dir, "model.yaml"));
    writeFileSync(join(dir, "eval.yaml"), EVALUATION);
    const out = join(dir, "run");
    const r = reins(["eval", join(dir, "eval.yaml"), "--out", out, "--json", "--quiet"], { timeout: 120_000 });
    expect(r.code, r.stderr).toBe(0);

    const plan = JSON.parse(readFileSync(join(out, "plan.json"), "utf8"));
    expect(plan.harnesses[0].knobValues).toEqual({ systemPrompt: "Write the file, nothing else.", tools: ["write_file"], maxTurns: 1 });
    const [rollout] = readFileSync(join(out, "rollouts.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    // The scripted policy writes the file on its first turn and would answer on a second: one turn allowed.
    expect(rollout.passed).toBe(true);
    expect(rollout.calls).toBe(1);
    expect(rollout.harnessExit.code).toBe(3); // reins-agent: out of turns
    const calls = readFileSync(join(out, "calls.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const prompt = (await loadTokenizer({ type: "qwen3" })).decode(calls[0].promptIds);
    expect(prompt.startsWith("<|im_start|>system\nWrite the file, nothing else.\n")).toBe(true);
    expect(prompt).toContain('"name": "write_file"');
    for (const other of ["read_file", "list_files", "run_command"]) expect(prompt).not.toContain(`"name": "${other}"`);
  }, 150_000);
});
