import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnHarness, writeHomeFiles } from "../../src/runtime/harness/launch.js";
import type { LaunchPlan } from "../../src/runtime/harness/launch-plan.js";
import { pidAlive } from "../suite-hygiene.js";

async function waitGone(pid: number): Promise<boolean> {
  for (let i = 0; i < 50 && pidAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  return !pidAlive(pid);
}

describe("spawnHarness", () => {
  let dir: string;
  const plan = (script: string): LaunchPlan => ({
    argv: ["bash", "-c", script],
    env: { PATH: "/usr/bin:/bin", HOME: dir },
    cwd: dir,
    home: dir,
    homeFiles: [],
  });
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "reins-spawn-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("passes exactly the planned environment and closes stdin", async () => {
    process.env.REINS_TEST_HOST_SECRET = "leak";
    const exit = await spawnHarness(plan('env | sort; read -r line && echo "stdin had: $line" || echo "stdin closed"'), { timeoutMs: 20_000 });
    delete process.env.REINS_TEST_HOST_SECRET;
    expect(exit.exitCode).toBe(0);
    expect(exit.stdout).not.toContain("REINS_TEST_HOST_SECRET");
    expect(exit.stdout).toContain(`HOME=${dir}`);
    expect(exit.stdout).toContain("stdin closed");
  });

  it("kills the whole process group on timeout, children included", async () => {
    const exit = await spawnHarness(plan("sleep 300 & echo $!; sleep 300"), { timeoutMs: 1000, graceMs: 200 });
    expect(exit.timedOut).toBe(true);
    expect(exit.exitCode).toBeNull();
    const child = Number(exit.stdout.trim());
    expect(child).toBeGreaterThan(0);
    expect(await waitGone(child)).toBe(true);
  });

  it("also ends what the harness left running after it exited", async () => {
    const exit = await spawnHarness(plan("sleep 300 >/dev/null 2>&1 & echo $!"), { timeoutMs: 20_000 });
    expect(exit.exitCode).toBe(0);
    expect(exit.timedOut).toBe(false);
    expect(await waitGone(Number(exit.stdout.trim()))).toBe(true);
  });

  it("stops on abort", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const exit = await spawnHarness(plan("sleep 300"), { timeoutMs: 60_000, graceMs: 200, signal: controller.signal });
    expect(exit.aborted).toBe(true);
    expect(exit.signal).toBe("SIGTERM");
  });

  it("reports a command that cannot start", async () => {
    const exit = await spawnHarness({ ...plan(""), argv: [path.join(dir, "no-such-binary")] }, { timeoutMs: 5000 });
    expect(exit.spawnError).toMatch(/ENOENT/);
    expect(exit.exitCode).toBeNull();
  });

  it("writes output to files when asked, and home files with private modes", async () => {
    const out = path.join(dir, "out.txt");
    const home = path.join(dir, "home");
    await writeHomeFiles({ ...plan(""), home, homeFiles: [{ path: path.join(home, ".cfg/a.toml"), content: "x = 1\n" }] });
    expect(await readFile(path.join(home, ".cfg/a.toml"), "utf8")).toBe("x = 1\n");
    const exit = await spawnHarness(plan("echo to-file"), { timeoutMs: 20_000, stdoutFile: out });
    expect(exit.stdout).toBe("");
    expect(await readFile(out, "utf8")).toBe("to-file\n");
  });
});
