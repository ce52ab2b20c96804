/**
 * A training run with the real Claude Code in the mix (next to reins-agent), killed with SIGKILL
 * after its first trained step and resumed: it completes with nothing repeated — every rollout
 * sampled once, every call recorded once, every step trained once — and reports held-out results
 * per harness.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../executor/helpers.js";
import { skipHarness, skipNote } from "../harness/scenario.js";
import { reins } from "../reins-cli.js";
import { editSpec, events, experiment, jsonl, runKilledAfterFirstStep } from "./helpers.js";

/** The quickstart family cut to 3 phrasings × 2 words (6 tasks: 4 for training, 2 held out). */
const SMALL_MATRIX = `  matrix:
    style: [create, write, put]
    word: [hi, yes]
    include:
      - {style: create, ask: Create a file answer.txt containing}
      - {style: write, ask: Write to answer.txt the word}
      - {style: put, ask: "Please put into answer.txt:"}
      - {style: create, word: hi, split: held-out}
      - {style: write, word: yes, split: held-out}
`;

function mixedExperiment(dir: string): string {
  const file = experiment(dir);
  editSpec(join(dir, "spec", "family.yaml"), [[/ {2}matrix:\n( {4}.*\n| {6}.*\n)+/, SMALL_MATRIX]]);
  editSpec(file, [
    [
      / {2}harnesses:\n {4}- name: reins-agent\n/,
      `  harnesses:
    - name: claude-code
      systemPrompt: Do the task with the Write tool, then reply done.
      tools: [Write]
      maxTurns: 3
    - name: reins-agent
`,
    ],
    [/ {2}tasksPerStep: \d+\n/, "  tasksPerStep: 4\n"],
    [/ {2}steps: 3\n/, "  steps: 2\n"],
  ]);
  return file;
}

describe.skipIf(skipHarness("claude-code"))(`reins run with Claude Code in the mix${skipNote("claude-code")}`, () => {
  it("killed after its first trained step and resumed, completes with nothing repeated", async () => {
    const dir = tempDir("reins-mix-resume-");
    const file = mixedExperiment(dir);
    const runDir = join(dir, "run");
    const tmp = join(dir, "tmp");
    mkdirSync(tmp);
    await runKilledAfterFirstStep(file, runDir, tmp);
    const before = jsonl(runDir, "rollouts.jsonl")
      .map((r) => r.id)
      .filter((id: string) => !id.startsWith("sft-"));
    expect(before.length).toBeGreaterThan(0);

    const resumed = reins(["run", "--resume", runDir, "--json", "--quiet"], { timeout: 900_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    const out = JSON.parse(resumed.stdout);
    expect(out.steps).toBe(2);

    const plan = JSON.parse(readFileSync(join(runDir, "plan.json"), "utf8"));
    const planned = plan.steps.flatMap((s: any) => s.rollouts.map((r: any) => r.id)).sort();
    const results = jsonl(runDir, "rollouts.jsonl");
    const ids = results
      .map((r) => r.id)
      .filter((id: string) => !id.startsWith("sft-"))
      .sort();
    expect(ids).toEqual(planned); // every planned rollout, each once
    const all = results.map((r) => r.id);
    expect(new Set(all).size).toBe(all.length); // the SFT replays too
    expect(before.every((id: string) => ids.includes(id))).toBe(true);
    const harnesses = new Set(results.map((r) => r.harness));
    expect([...harnesses].sort()).toEqual(["claude-code", "reins-agent"]);
    expect(results.filter((r) => r.harness === "claude-code" && r.status === "ok").length).toBeGreaterThan(0);

    const calls = jsonl(runDir, "calls.jsonl");
    const keys = calls.map((c) => `${c.rolloutId}/${c.try}/${c.seq}`);
    expect(new Set(keys).size).toBe(keys.length); // no call recorded twice
    const trained = events(runDir)
      .filter((e) => e.type === "checkpoint" && e.phase === "step")
      .map((e) => e.step);
    expect(new Set(trained).size).toBe(trained.length);
    expect(trained).toHaveLength(2);
    expect(events(runDir).filter((e) => e.type === "checkpoint" && e.phase === "sft")).toHaveLength(1);

    expect(Object.keys(out.heldOut.byHarness).sort()).toEqual(["claude-code", "reins-agent"]);
    for (const h of Object.values<any>(out.heldOut.byHarness)) expect(h.n).toBe(2);
    // Every trained token is one the engine sampled, through Claude Code too.
    const fidelity = JSON.parse(readFileSync(join(runDir, "summary.json"), "utf8")).fidelity.byHarness;
    expect(fidelity["claude-code"].calls).toBeGreaterThan(0);
    for (const h of Object.values<any>(fidelity)) expect(h.mismatchedTrainedTokens).toBe(0);
  }, 1_200_000);
});
