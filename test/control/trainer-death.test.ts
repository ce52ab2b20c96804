/**
 * A trainer worker that dies in the middle of a run is detected and reported in plain words; the
 * run stops (exit 1) instead of going on with garbage, and says how to resume.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../executor/helpers.js";
import { spawnReins } from "../reins-cli.js";
import { events, experiment } from "./helpers.js";

function workerPids(marker: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (cmd.includes("trainers.torch.worker") && cmd.includes(marker)) out.push(Number(pid));
    } catch {
      /* gone */
    }
  }
  return out;
}

describe("reins run with a dying trainer", () => {
  it("stops with a plain message and exit 1 when the trainer worker is killed", async () => {
    const dir = tempDir("reins-trainer-death-");
    const file = experiment(dir);
    const out = join(dir, "run");
    const child = spawnReins(["run", file, "--out", out], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setInterval(() => {
        if (events(out).some((e) => e.type === "checkpoint")) {
          for (const pid of workerPids(out)) process.kill(pid, "SIGKILL");
        }
      }, 100);
      child.on("exit", (c) => {
        clearInterval(timer);
        resolve(c);
      });
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/error\[Trainer\w*\]/);
    expect(stderr).toContain("--resume");
    expect(stderr).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
  }, 600_000);
});
