/**
 * What `reins run` and `reins eval` show on stderr while a phase runs (src/cli/progress.ts), on a
 * clock the test moves: counts, rate and ETA; in a log file a line at the first ETA, then at most
 * one every 5 s, and one at the end; on a terminal one redrawn line, kept when the phase ends.
 */
import { describe, expect, it } from "vitest";
import { duration, Progress } from "../../src/cli/progress.js";

function harness(tty: boolean) {
  let now = 1_000_000;
  const written: string[] = [];
  const stream = { write: (s: string) => written.push(s), isTTY: tty };
  const progress = new Progress({ enabled: true, stream, tty, now: () => now, since: now, timer: false });
  return { progress, written, tick: (ms: number) => (now += ms), text: () => written.join("") };
}

describe("progress on stderr", () => {
  it("in a log file, a phase of 1,000 rollouts over 100 s prints the first ETA, then a line at most every 5 s, and its end", () => {
    const { progress, text, tick } = harness(false);
    progress.onEvent({ type: "progress", phase: "rollouts", label: "step 1/3 rollouts", unit: "rollouts", total: 1000, done: 0 });
    for (let i = 0; i < 1000; i++) {
      progress.onEvent({ type: "rollout-started", try: 1 });
      tick(100);
      progress.onEvent({ type: "rollout-finished", status: "ok", passed: i % 4 === 0 });
    }
    const lines = text().trimEnd().split("\n");
    // 100 s at one line per 5 s at most, plus the first ETA and the end.
    expect(lines.length).toBeLessThanOrEqual(100 / 5 + 2);
    expect(lines.length).toBeGreaterThanOrEqual(100 / 5);
    expect(lines[0]).toBe("[   0s] step 1/3 rollouts: 1/1000 rollouts, 10.0 rollouts/s, ETA 1m40s, 0.1s elapsed (pass 100%)");
    expect(lines[1]).toMatch(/^\[ {3}5s\] step 1\/3 rollouts: 51\/1000 rollouts, 10\.0 rollouts\/s, ETA 1m35s, 5\.1s elapsed \(pass \d+%\)$/);
    expect(lines.at(-1)).toBe("[ 100s] step 1/3 rollouts: 1000/1000 rollouts in 1m40s, 10.0 rollouts/s (pass 25%)");
    expect(text()).not.toContain("\r");
  });

  it("shows SFT steps with their rate and ETA, a one-unit phase as done, and talk between the lines", () => {
    const { progress, text, tick } = harness(false);
    progress.say("SFT: replaying 4 reference solutions through the harness");
    progress.onEvent({ type: "progress", phase: "sft", label: "SFT", unit: "steps", total: 40, done: 0 });
    for (let s = 1; s <= 40; s++) {
      tick(1250);
      progress.onEvent({ type: "progress", phase: "sft", label: "SFT", unit: "steps", total: 40, done: s });
    }
    progress.onEvent({ type: "progress", phase: "publishing", label: "SFT publishing", unit: "weights", total: 1, done: 0 });
    tick(400);
    progress.onEvent({ type: "progress", phase: "publishing", label: "SFT publishing", unit: "weights", total: 1, done: 1 });
    const lines = text().trimEnd().split("\n");
    expect(lines[0]).toBe("[   0s] SFT: replaying 4 reference solutions through the harness");
    expect(lines[1]).toBe("[   1s] SFT: 1/40 steps, 48.0 steps/min, ETA 49s, 1.3s elapsed");
    expect(lines).toContain("[  50s] SFT: 40/40 steps in 50s, 48.0 steps/min");
    expect(lines.at(-1)).toBe("[  50s] SFT publishing: done in 0.4s");
    expect(lines.length).toBeLessThanOrEqual(2 + 50 / 5 + 2);
  });

  it("a phase announced complete (a resumed run) prints nothing; the rate counts only this process's work", () => {
    const { progress, text, tick } = harness(false);
    progress.onEvent({ type: "progress", phase: "rollouts", label: "step 2/3 rollouts", unit: "rollouts", total: 8, done: 8 });
    expect(text()).toBe("");
    progress.onEvent({ type: "progress", phase: "rollouts", label: "step 3/3 rollouts", unit: "rollouts", total: 8, done: 6 });
    tick(2000);
    progress.onEvent({ type: "rollout-finished", status: "ok", passed: true });
    expect(text()).toBe("[   2s] step 3/3 rollouts: 7/8 rollouts, 30.0 rollouts/min, ETA 2.0s, 2.0s elapsed (pass 100%)\n");
  });

  it("on a terminal, redraws one line with a bar and keeps the finished phase as a line; talk clears it first", () => {
    const { progress, written, text, tick } = harness(true);
    progress.onEvent({ type: "progress", phase: "sft", label: "SFT", unit: "steps", total: 4, done: 0 });
    tick(500);
    progress.onEvent({ type: "progress", phase: "sft", label: "SFT", unit: "steps", total: 4, done: 1 });
    expect(written.at(-1)).toBe("\r\x1b[2K[   1s] SFT: █████░░░░░░░░░░░░░░░ 1/4 steps, 2.0 steps/s, ETA 1.5s, 0.5s elapsed");
    progress.say("SFT step 1/4: loss 6.1");
    expect(written.slice(-3)).toEqual([
      "\r\x1b[2K",
      "[   1s] SFT step 1/4: loss 6.1\n",
      "\r\x1b[2K[   1s] SFT: █████░░░░░░░░░░░░░░░ 1/4 steps, 2.0 steps/s, ETA 1.5s, 0.5s elapsed",
    ]);
    tick(1500);
    progress.onEvent({ type: "progress", phase: "sft", label: "SFT", unit: "steps", total: 4, done: 4 });
    expect(text().endsWith("\r\x1b[2K[   2s] SFT: 4/4 steps in 2.0s, 2.0 steps/s\n")).toBe(true);
  });

  it("a long phase that has not finished a unit yet still shows it is alive: every 5 s in a log, every second on a terminal", () => {
    const log = harness(false);
    log.progress.onEvent({ type: "progress", phase: "training", label: "step 1/2 training", unit: "mini-batches", total: 1, done: 0 });
    for (let s = 0; s < 12; s++) {
      log.tick(1000);
      log.progress.tick();
    }
    expect(log.text()).toBe(
      "[   5s] step 1/2 training: 0/1 mini-batches, ETA –, 5.0s elapsed\n[  10s] step 1/2 training: 0/1 mini-batches, ETA –, 10s elapsed\n",
    );
    const term = harness(true);
    term.progress.onEvent({ type: "progress", phase: "training", label: "step 1/2 training", unit: "mini-batches", total: 1, done: 0 });
    term.tick(3000);
    term.progress.tick();
    expect(term.written.at(-1)).toBe("\r\x1b[2K[   3s] step 1/2 training: ░░░░░░░░░░░░░░░░░░░░ 0/1 mini-batches, ETA –, 3.0s elapsed");
  });

  it("--quiet prints nothing", () => {
    const written: string[] = [];
    const progress = new Progress({ enabled: false, stream: { write: (s: string) => written.push(s) } });
    progress.say("hello");
    progress.onEvent({ type: "progress", phase: "sft", label: "SFT", unit: "steps", total: 2, done: 2 });
    progress.finish();
    expect(written).toEqual([]);
  });

  it("writes durations as a person reads them", () => {
    expect([0.42, 7, 9.96, 65, 3 * 3600 + 4 * 60].map(duration)).toEqual(["0.4s", "7.0s", "10s", "1m05s", "3h04m"]);
  });
});
