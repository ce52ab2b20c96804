/**
 * `reins eval` reports fidelity per harness: reins-agent in local sandboxes with a scripted model
 * that writes "hi" into answer.txt. The same block is in summary.json and the --json output; the
 * batch a training step would build of these rollouts trains only engine-sampled ids (0
 * mismatched, of every generated token); each rollout's second call carries the first one's
 * completion from stored ids; the first call's prompt equals the chat template's own rendering;
 * and the printed summary shows the fidelity table.
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const MODEL = `apiVersion: reins/v1alpha1
kind: Model
metadata:
  name: writes-hi
spec:
  tokenizer: {type: qwen3}
  toolCallFormat: qwen3
  reasoning: {start: "<think>", end: "</think>"}
  stopTokens: ["<|im_end|>"]
  engine:
    type: scripted
    script:
      - toolCalls:
          - name: write_file
            arguments: {path: answer.txt, content: hi}
      - text: done
`;

const EVALUATION = `apiVersion: reins/v1alpha1
kind: Evaluation
metadata:
  name: fidelity-eval
spec:
  imports: [family.yaml, model.yaml]
  model: {name: writes-hi}
  tasks:
    - labels: {reins.dev/family: write-word, split: held-out}
  harnesses:
    - name: reins-agent
      env:
        REINS_TOOLS: write_file
        REINS_SYSTEM_PROMPT: Do the task with the write_file tool, then reply done.
        REINS_MAX_TURNS: "3"
  attempts: 2
  sandbox: {provider: local, concurrency: 4, timeoutSeconds: 60}
  seed: 3
`;

const FIELDS = ["calls", "prefixBreaks", "mismatchedTrainedTokens", "freshPromptTokens", "storedPromptTokens", "droppedByClass", "proxyAddedMs"];

describe("reins eval reports fidelity per harness", () => {
  it("in summary.json, --json and the printed summary, with 0 mismatched trained tokens", () => {
    const dir = tempDir("reins-fidelity-eval-");
    cpSync("examples/quickstart/family.yaml", join(dir, "family.yaml"));
    writeFileSync(join(dir, "model.yaml"), MODEL);
    writeFileSync(join(dir, "evaluation.yaml"), EVALUATION);
    const out = join(dir, "run");
    const r = reins(["eval", join(dir, "evaluation.yaml"), "--out", out, "--json", "--quiet"], { timeout: 300_000 });
    expect(r.code, r.stderr).toBe(0);
    const printed = JSON.parse(r.stdout);
    const written = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(printed.fidelity).toEqual(written.fidelity);
    expect(Object.keys(printed.fidelity.byHarness)).toEqual(["reins-agent"]);
    const f = printed.fidelity.byHarness["reins-agent"];
    for (const k of FIELDS) expect(f, k).toHaveProperty(k);

    const calls = readFileSync(join(out, "calls.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(printed.rollouts).toBe(16);
    expect(printed.passAt["1"]).toBeGreaterThan(0);
    expect(f.calls).toBe(calls.length);
    expect(f.calls).toBe(32);
    // Every generated token of every rollout is in the would-be batch, and each is the sampled id.
    const generated = calls.reduce((s: number, c: { completionIds: number[] }) => s + c.completionIds.length, 0);
    expect(f.checkedTrainedTokens).toBe(generated);
    expect(f.mismatchedTrainedTokens).toBe(0);
    // reins-agent appends to its conversation: no prefix breaks, and the second call of each rollout
    // takes its first call's completion from the stored ids.
    expect(f.prefixBreaks).toBe(0);
    expect(f.reusedCompletionTokens).toBe(
      calls.filter((c: { seq: number }) => c.seq === 0).reduce((s: number, c: { completionIds: number[] }) => s + c.completionIds.length, 0),
    );
    const promptTokens = calls.reduce((s: number, c: { promptIds: number[] }) => s + c.promptIds.length, 0);
    expect(f.storedPromptTokens + f.freshPromptTokens).toBe(promptTokens);
    expect(f.storedPromptTokens).toBeGreaterThan(f.freshPromptTokens);
    expect(f.droppedByClass).toEqual({});
    expect(f.templateChecked).toBe(16);
    expect(f.templateMismatches).toBe(0);
    expect(f.proxyAddedMs.p50).toBeGreaterThanOrEqual(0);
    expect(f.proxyAddedMs.p99).toBeGreaterThanOrEqual(f.proxyAddedMs.p50);

    // The printed summary (a resumed run with nothing left to do prints it again).
    const again = reins(["eval", "--resume", out, "--quiet"], { timeout: 120_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(
      /Fidelity\nharness +calls +prompt stored +prompt fresh +prefix breaks +trained ≠ sampled +template ≠ +dropped side calls +proxy ms p50\/p99\n/,
    );
    expect(again.stdout).toMatch(
      new RegExp(`reins-agent +32 +${f.storedPromptTokens} +${f.freshPromptTokens} +0 +0 of ${generated} +0 of 16 +0 +\\d+/\\d+\\n`),
    );
  }, 400_000);
});
