/** `reins trajectories`: in-process for the content, as a real process for exit codes and stderr. */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TrajectoriesOptions } from "../../src/cli/commands/trajectories.js";
import { runTrajectories } from "../../src/cli/commands/trajectories.js";
import { appendOnlyChain, DEFAULT_SHAPE, RolloutBuilder, seededRng, trailingContextChain } from "./synthetic.js";

const run = promisify(execFile);
let dir = "";
let calls = "";
let rewards = "";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "reins-traj-cli-"));
  const rng = seededRng(41);
  const lines: string[] = [];
  const claude = new RolloutBuilder("r-claude", rng);
  appendOnlyChain(claude, { ...DEFAULT_SHAPE, turns: 4 });
  const open = new RolloutBuilder("r-openclaw", rng);
  trailingContextChain(open, { ...DEFAULT_SHAPE, turns: 3 });
  const retry = new RolloutBuilder("r-retry", rng);
  let h = retry.tokens(100);
  retry.call(h, retry.tokens(10), { error: { kind: "engine", message: "500" } });
  h = [...h, ...retry.call(h, retry.tokens(12)), ...retry.tokens(20)];
  retry.call(h, retry.tokens(4));
  for (const b of [claude, open, retry]) for (const r of b.records) lines.push(JSON.stringify(r));
  calls = join(dir, "calls.jsonl");
  await writeFile(calls, `${lines.join("\n")}\n`);
  rewards = join(dir, "rewards.json");
  await writeFile(
    rewards,
    JSON.stringify({
      "r-claude": { reward: 1, task: "t", harness: "claude-code" },
      "r-retry": { reward: 0, task: "t", harness: "claude-code" },
      "r-openclaw": { reward: 1, task: "t", harness: "openclaw" },
    }),
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function inProcess(opts: TrajectoriesOptions, path = calls) {
  let stdout = "";
  let stderr = "";
  const code = await runTrajectories(path, opts, { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } });
  return { code, stdout, stderr };
}

describe("reins trajectories", () => {
  it("--json prints per-rollout fields and batch totals", async () => {
    const { code, stdout } = await inProcess({ json: true });
    expect(code).toBe(0);
    const out = JSON.parse(stdout);
    const by = Object.fromEntries(out.rollouts.map((r: { rollout: string }) => [r.rollout, r]));
    expect(by["r-claude"]).toMatchObject({ calls: 4, leaves: 1, droppedDeadLeaves: 0, droppedBranches: 0 });
    expect(by["r-openclaw"]).toMatchObject({ calls: 3, leaves: 3, droppedDeadLeaves: 0 });
    expect(by["r-retry"]).toMatchObject({ calls: 3, leaves: 1, droppedDeadLeaves: 1, trainedTokens: 16 });
    for (const r of out.rollouts) {
      for (const k of ["leaves", "droppedDeadLeaves", "droppedBranches", "generatedTokens", "trainedTokens", "contextTokens", "naiveTokens"])
        expect(typeof r[k]).toBe("number");
      expect("advantage" in r).toBe(false);
    }
    expect(out.totals.naiveTokens).toBe(out.rollouts.reduce((s: number, r: { naiveTokens: number }) => s + r.naiveTokens, 0));
    expect(out.totals.rollouts).toBe(3);
  });

  it("--rewards adds per-pair advantages; the table view shows the same numbers", async () => {
    const { stdout } = await inProcess({ json: true, rewards });
    const out = JSON.parse(stdout);
    const adv = Object.fromEntries(out.rollouts.map((r: { rollout: string; advantage: number }) => [r.rollout, r.advantage]));
    expect(adv["r-claude"]).toBeCloseTo(0.5 / (Math.SQRT1_2 + 1e-6), 9);
    expect(adv["r-openclaw"]).toBe(0);
    expect(out.groups.map((g: { harness: string; zeroVariance: boolean }) => [g.harness, g.zeroVariance])).toEqual([
      ["claude-code", false],
      ["openclaw", true],
    ]);
    const table = await inProcess({ rewards });
    expect(table.stdout).toMatch(/^rollout\s+calls\s+leaves\s+deadLeaves/);
    expect(table.stdout).toContain("r-retry");
    expect(table.stdout).toContain(adv["r-claude"].toFixed(3));
  });

  it("--svg draws the tree of one rollout; --out writes a batch; --sft writes samples", async () => {
    const svg = join(dir, "tree.svg");
    const out = join(dir, "batch");
    const sft = join(dir, "sft.jsonl");
    const r = await inProcess({ svg, rollout: "r-retry", rewards, out, sft, layout: "paths" });
    expect(r.code).toBe(0);
    const text = await readFile(svg, "utf8");
    expect(text.startsWith("<svg")).toBe(true);
    expect(text).toContain("✕ dead leaf");
    const manifest = JSON.parse(await readFile(join(out, "batch.json"), "utf8"));
    expect(manifest.layout).toBe("paths");
    expect(manifest.paths.length).toBe(1 + 3 + 1);
    expect((await readFile(sft, "utf8")).trim().split("\n")).toHaveLength(1 + 3);
    expect((await inProcess({ svg, rollout: "nope" })).code).toBe(1);
  });

  it("as a process: bad input exits 1 with located errors and no stack trace; usage errors exit 2", async () => {
    const bad = join(dir, "bad.jsonl");
    const good = (await readFile(calls, "utf8")).split("\n")[0];
    await writeFile(bad, `${good}\n{"v":1,"rollout":"x"\nnot json\n`);
    const cli = (args: string[]) =>
      run(process.execPath, ["--import", "tsx", "test/trajectories/cli-entry.ts", "trajectories", ...args], { cwd: process.cwd() }).then(
        (r) => ({ code: 0, ...r }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
      );
    const [badFile, missing, usage, notJson] = await Promise.all([
      cli([bad]),
      cli([join(dir, "missing.jsonl")]),
      cli([calls, "--svg", "x.svg"]),
      cli([calls, "--rewards", calls]),
    ]);
    expect(badFile.code).toBe(1);
    expect(badFile.stderr).toContain("bad.jsonl:2:");
    expect(badFile.stderr).toContain("CallRecordNotJson");
    expect(badFile.stderr).toContain("bad.jsonl:3:");
    expect(badFile.stderr).not.toMatch(/\n\s+at /);
    expect(badFile.stdout).toBe("");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("FileNotFound");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--svg needs --rollout");
    expect(notJson.code).toBe(1);
    expect(notJson.stderr).toMatch(/Rewards/);
    expect(notJson.stderr).not.toMatch(/\n\s+at /);
  });
});
