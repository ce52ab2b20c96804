/**
 * `kill -9` of the runner at a random moment, then `--resume`: every rollout is in the results
 * exactly once, and rollouts finished before the kill did not run again.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reins, spawnReins } from "../reins-cli.js";
import { evaluationYaml, taskYaml, tempDir, writeSpecs } from "./helpers.js";

function lines(file: string): any[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return [];
      }
    });
}

describe("resume after kill -9", () => {
  it("holds each rollout exactly once and never re-runs a finished one", async () => {
    const dir = tempDir();
    const tasks = Array.from({ length: 12 }, (_, i) => taskYaml(`t${i}`)).join("---\n");
    const file = writeSpecs(
      dir,
      evaluationYaml({ command: ["bash", "-c", "sleep 0.$((RANDOM % 5 + 2)); printf hi > hello.txt"], tasks, attempts: 3, concurrency: 4 }),
    );
    const out = join(dir, "run");
    // What the killed run cannot clean up (sandbox and socket directories) stays in its own TMPDIR, inside `dir`.
    const tmp = join(dir, "tmp");
    mkdirSync(tmp);
    const child = spawnReins(["eval", file, "--out", out, "--quiet"], { stdio: "ignore", env: { TMPDIR: tmp } });
    // Kill at a random moment once some (but not all) rollouts are finished.
    const target = 5 + Math.floor(Math.random() * 15);
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (lines(join(out, "rollouts.jsonl")).length >= target) {
          clearInterval(timer);
          child.kill("SIGKILL");
          resolve();
        }
      }, 50);
      child.on("exit", () => {
        clearInterval(timer);
        reject(new Error("the run finished before it could be killed"));
      });
    });
    await new Promise((r) => child.on("exit", r));
    const before = lines(join(out, "rollouts.jsonl")).map((r) => r.id);
    expect(before.length).toBeGreaterThanOrEqual(target);
    expect(before.length).toBeLessThan(36);

    // The killed runner left its sandboxes (size-capped mounts, control groups); the next runner on
    // the same state root prunes them before it starts anything.
    const resumed = reins(["eval", "--resume", out, "--json", "--quiet"], { timeout: 180_000, env: { TMPDIR: tmp } });
    expect(resumed.code, resumed.stderr).toBe(0);
    const summary = JSON.parse(resumed.stdout);
    expect(summary.rollouts).toBe(36);

    const results = lines(join(out, "rollouts.jsonl"));
    const ids = results.map((r) => r.id);
    expect(new Set(ids).size).toBe(36);
    expect(ids.length).toBe(36);
    // Finished rollouts did not start again after the resume.
    const events = lines(join(out, "events.jsonl"));
    const resumeAt = events.findIndex((e) => e.type === "resumed");
    expect(resumeAt).toBeGreaterThan(0);
    const restarted = events
      .slice(resumeAt)
      .filter((e) => e.type === "rollout-started")
      .map((e) => e.rollout);
    for (const id of before) expect(restarted).not.toContain(id);
    // Calls and results agree (command harnesses make no calls; the file holds none twice).
    const calls = lines(join(out, "calls.jsonl"));
    expect(calls.length).toBe(0);
    expect(results.every((r) => r.status === "ok" && r.reward === 1)).toBe(true);
    expect(mountsUnder(tmp)).toEqual([]);
  }, 240_000);
});

/** Mount points under `dir` (the kernel's view, so an unmounted-but-present directory is not one). */
function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((m) => m.startsWith(`${dir}/`));
}
