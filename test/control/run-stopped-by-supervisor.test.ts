/**
 * A supervisor that times a run out (a CI job, `timeout`, Node's spawnSync) closes the run's pipes
 * and sends SIGTERM. The run must stop as on Ctrl-C: sandboxes destroyed, exit 130, resumable. It
 * once exited 0 at its first word on the closed stderr, leaving its sandboxes behind, and the
 * supervisor read that as success.
 */
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { spawnReins } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { events, experiment } from "./helpers.js";

/** Sandboxes still on disk under a run's TMPDIR. */
function sandboxesLeft(tmp: string): string[] {
  const root = join(tmp, "reins-sandboxes");
  return existsSync(root) ? readdirSync(root).filter((n) => n.startsWith("sandbox-")) : [];
}

describe("a run stopped by its supervisor", () => {
  it("exits 130 with its sandboxes removed when its pipes close before SIGTERM", async () => {
    const dir = tempDir("reins-run-supervised-");
    const file = experiment(dir);
    const runDir = join(dir, "run");
    const tmp = join(dir, "tmp");
    mkdirSync(tmp);
    const child = spawnReins(["run", file, "--out", runDir, "--json"], { stdio: ["ignore", "pipe", "pipe"], env: { TMPDIR: tmp } });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on("exit", (code, signal) => res({ code, signal })));
    child.stdout!.resume();
    child.stderr!.resume();
    // Wait for rollouts in flight (sandboxes exist), then do what spawnSync's timeout does.
    const started = await new Promise<boolean>((res) => {
      const timer = setInterval(() => {
        if (events(runDir).some((e) => e.type === "rollout-started")) {
          clearInterval(timer);
          res(true);
        }
      }, 50);
      void exited.then(() => {
        clearInterval(timer);
        res(false);
      });
    });
    expect(started, "the run ended before any rollout started").toBe(true);
    child.stdout!.destroy();
    child.stderr!.destroy();
    child.kill("SIGTERM");
    const { code, signal } = await exited;
    expect({ code, signal }).toEqual({ code: 130, signal: null });
    expect(sandboxesLeft(tmp)).toEqual([]);
    expect(events(runDir).filter((e) => e.type === "run-stopped")).toEqual([]);
  }, 300_000);
});
