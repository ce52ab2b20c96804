/**
 * `reins run` end to end on a tiny experiment (real sandboxes, reins-agent, the proxy, the onnx
 * engine, the torch worker on CPU): SFT, sample, verify, trees, train, publish, reload. Then the
 * same run killed with SIGKILL during training and resumed reaches the same bookkeeping: every
 * step trained once, every rollout sampled once, one weights version per step.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { trainerRoot } from "../../src/runtime/training/trainer-process.js";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { editSpec, events, experiment, runKilledAfterFirstStep } from "./helpers.js";

function results(runDir: string): any[] {
  return readFileSync(join(runDir, "rollouts.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** Commands of live (not zombie) processes whose command line mentions `text`. */
function livingWith(text: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      if (cmd.includes(text) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"))) out.push(cmd);
    } catch {
      // gone
    }
  }
  return out;
}

/** The optimizer's step count in a trainer checkpoint. */
function optimizerSteps(checkpoint: string): number {
  const script =
    "import sys\nfrom trainers.torch import checkpoint_io\ns = checkpoint_io.read(sys.argv[1])['optimizer']['state']\nprint(int(max(float(x['step']) for x in s.values())))";
  const env = { ...process.env, PYTHONPATH: trainerRoot(), PYTHONDONTWRITEBYTECODE: "1" };
  return Number(execFileSync("/usr/bin/python3", ["-c", script, checkpoint], { encoding: "utf8", cwd: trainerRoot(), env }).trim());
}

describe("reins run", () => {
  it("trains end to end, and a run killed during training resumes to the same bookkeeping", async () => {
    const dir = tempDir("reins-run-loop-");
    const file = experiment(dir);
    // Enough SFT that some rollouts succeed, and groups of 4: steps have successes to train on
    // (positiveOnly) and publish new weights (a step whose groups all pass or all fail has nothing
    // to train and keeps its weights version).
    editSpec(file, [
      [/ {4}groupSize: 2\n/, "    groupSize: 4\n"],
      [/ {2}sft: \{[^}]*\}/, "  sft: {steps: 80, learningRate: 3e-3, batchSize: 8}"],
    ]);
    const a = join(dir, "a");
    const r = reins(["run", file, "--out", a, "--json", "--quiet"], { timeout: 600_000 });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.steps).toBe(3);
    const trainedSteps = out.metrics.map((m: any) => m.trainedRollouts > 0);
    expect(trainedSteps).toContain(true);
    expect(out.heldOut.before).toBeGreaterThanOrEqual(0);
    expect(out.heldOut.after).toBeGreaterThanOrEqual(0);
    expect(out.runDir).toBe(a);
    expect(readFileSync(join(a, "reward-curve.svg"), "utf8")).toContain("<svg");
    const evA = events(a);
    const trainedA = evA.filter((e) => e.type === "checkpoint" && e.phase === "step").map((e) => e.step);
    expect(trainedA.length).toBe(3);
    // Off-policy lag is explicit: every call records the weights version that produced it.
    const calls = readFileSync(join(a, "calls.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const sampled = calls.filter((c) => !String(c.rolloutId).startsWith("sft-"));
    expect(sampled.length).toBeGreaterThan(0);
    expect(sampled.every((c) => typeof c.weightsVersion === "string" && c.weightsVersion.length > 0)).toBe(true);
    const versionsByStep = new Map<number, Set<string>>();
    for (const res of results(a))
      if (res.step >= 0 && res.weightsVersion) (versionsByStep.get(res.step) ?? versionsByStep.set(res.step, new Set()).get(res.step)!).add(res.weightsVersion);
    for (const v of versionsByStep.values()) expect(v.size).toBe(1);
    // RL starts Adam afresh after SFT (sft.optimizerState: reset, the default): the RL checkpoints'
    // optimizer counts only RL's optimizer steps (one per mini-batch: the quickstart's 4, or fewer
    // when a step has fewer trees), not SFT's 80 before them.
    const adamSteps = (ev: any[]) => ev.filter((e) => e.type === "checkpoint").map((e) => [e.phase, optimizerSteps(e.path)]);
    const stepsA = adamSteps(evA);
    expect(stepsA[0]).toEqual(["sft", 80]);
    const parts = out.metrics.map((m: any) => Math.min(4, m.trainedRollouts));
    expect(stepsA.slice(1).map(([, n]) => n)).toEqual(parts.map((_: number, i: number) => parts.slice(0, i + 1).reduce((a: number, b: number) => a + b, 0)));

    // The same run, killed right after its first trained step, then resumed. What the killed run
    // cannot clean up (sandbox and socket directories) stays in its own TMPDIR, inside `dir`.
    const b = join(dir, "b");
    const tmp = join(dir, "tmp");
    mkdirSync(tmp);
    await runKilledAfterFirstStep(file, b, tmp);
    // Its trainer worker died with it.
    const deadline = Date.now() + 5_000;
    while (livingWith(b).length > 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
    expect(livingWith(b)).toEqual([]);
    const resumed = reins(["run", "--resume", b, "--json", "--quiet"], { timeout: 600_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    const outB = JSON.parse(resumed.stdout);
    expect(outB.steps).toBe(3);
    const evB = events(b);
    const versionsOf = (ev: any[]) => ev.filter((e) => e.type === "checkpoint").map((e) => e.version as string);
    // What ran before the kill is reported too: SFT, and every weights version that served.
    expect(out.sft?.passed).toBeGreaterThan(0);
    expect(outB.sft).toEqual(out.sft);
    const served = (ev: any[]) => [...new Set([out.versions[0], ...versionsOf(ev)])];
    expect(out.versions).toEqual(served(evA));
    // Weights versions are content hashes: the initial policy's, SFT's, and one more per step that
    // trained (a step with nothing to train checkpoints the weights it sampled with).
    expect(out.versions).toHaveLength(2 + trainedSteps.filter(Boolean).length);
    expect(outB.versions).toEqual(served(evB));
    expect(outB.versions.length).toBeGreaterThan(2);
    const trainedB = evB.filter((e) => e.type === "checkpoint" && e.phase === "step").map((e) => e.step);
    expect(trainedB.sort()).toEqual(trainedA.sort()); // each step trained (checkpointed) exactly once
    expect(adamSteps(evB)).toEqual(stepsA); // resumed from step 1's checkpoint: Adam's state kept, not reset again
    expect(evB.filter((e) => e.type === "checkpoint" && e.phase === "sft").length).toBe(1);
    const idsA = results(a)
      .map((x) => x.id)
      .sort();
    const idsB = results(b)
      .map((x) => x.id)
      .sort();
    expect(idsB).toEqual(idsA); // the same rollouts, each once
    expect(new Set(idsB).size).toBe(idsB.length);

    // A step's metrics are recorded before its commit, the checkpoint event; a run killed between
    // the two (here: b's events cut right before its last step's checkpoint) redoes that step's
    // training on resume, from the checkpoint before, and reports every step once.
    const at = (ev: any[], type: string, step: number) =>
      ev.findIndex((e) => e.type === type && e.step === step && (type !== "checkpoint" || e.phase === "step"));
    for (const step of trainedA) expect(at(evA, "step-metrics", step)).toBeLessThan(at(evA, "checkpoint", step));
    const lastStep = Math.max(...trainedB);
    const lines = readFileSync(join(b, "events.jsonl"), "utf8").split("\n").filter(Boolean);
    writeFileSync(
      join(b, "events.jsonl"),
      `${lines
        .slice(
          0,
          at(
            lines.map((l) => JSON.parse(l)),
            "checkpoint",
            lastStep,
          ),
        )
        .join("\n")}\n`,
    );
    const redone = reins(["run", "--resume", b, "--json"], { timeout: 600_000 });
    expect(redone.code, redone.stderr).toBe(0);
    expect(redone.stderr).toContain(`resumed from the checkpoint of step ${Math.max(...trainedB.filter((s) => s !== lastStep))}`);
    const outC = JSON.parse(redone.stdout);
    expect(outC.steps).toBe(3);
    expect(outC.metrics.map((m: any) => m.step)).toEqual([...trainedA].sort((x, y) => x - y));
    const evC = events(b);
    expect(outC.versions).toEqual(served(evC));
    expect(
      evC
        .filter((e) => e.type === "checkpoint" && e.phase === "step")
        .map((e) => e.step)
        .sort(),
    ).toEqual(trainedA.sort());
    expect(
      results(b)
        .map((x) => x.id)
        .sort(),
    ).toEqual(idsA); // no rollout sampled again

    // A checkpoint the worker cannot restore: the resumed run fails with a clear error, and its
    // worker does not outlive it.
    const last = evA.filter((e) => e.type === "checkpoint").at(-1)!;
    for (const f of readdirSync(last.path)) rmSync(join(last.path, f), { recursive: true, force: true });
    writeFileSync(join(last.path, "state.pt"), "not a checkpoint");
    const broken = reins(["run", "--resume", a, "--quiet"], { timeout: 600_000 });
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toMatch(/error\[\w+\]/);
    expect(broken.stderr).not.toMatch(/\n\s+at /);
    expect(livingWith(a)).toEqual([]);
  }, 900_000);
});
