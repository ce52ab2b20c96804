/**
 * A run directory is resumed only by the kind of run that made it, and a full disk stops a run
 * cleanly. Run as a user runs reins (the real `reins` process), except where said:
 *
 * - `reins eval --resume` of a training run (`reins run`), `reins run --resume` of an evaluation,
 *   and a multi-seed run directory resumed with a one-seed plan (or the other way round) are
 *   refused with RunKindMismatch, naming the directory's kind and the command that resumes it;
 *   nothing in the directory changes (every file's bytes, no lock left).
 * - ENOSPC while writing the run store (a 64 KiB tmpfs as the run's --out): `error[DiskFull]`
 *   with a hint, exit 1, no stack trace on stderr or in the run's files, no half-written file (a
 *   torn line, a temporary file); after space is made, `--resume` finishes the run, nothing
 *   counted twice. Mounting needs root: without it these tests are skipped, saying why.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { Plan } from "../../src/compiler/contract/plan.js";
import { openSeedsDirectory } from "../../src/runtime/control/seeds.js";
import type { RolloutResult } from "../../src/runtime/records/index.js";
import { RunStore } from "../../src/runtime/store/run-store.js";
import { experiment } from "../control/helpers.js";
import { reins as launch } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const STACK_LINE = /^\s+at .+/m;
const EVAL_SPEC = "test/fixtures/valid/contract.yaml";

function reins(args: string[], timeout = 120_000) {
  const r = launch(args, { timeout, env: { REINS_DEBUG: "" } });
  return { ...r, shown: `reins ${args.join(" ")}\nexit ${r.code}\n${r.stderr}` };
}

/** Every file under `dir` (relative path → its bytes, as text). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out[relative(dir, p)] = readFileSync(p, "latin1");
    }
  };
  walk(dir);
  return out;
}

/** `reins …` is refused with RunKindMismatch: exit 1, the message and hint given, no stack, and `dir` exactly as it was. */
function expectKindRefused(args: string[], dir: string, message: RegExp, hint: string): void {
  const before = snapshot(dir);
  const r = reins(args, 60_000);
  expect(r.code, r.shown).toBe(1);
  expect(r.stderr, r.shown).toContain("error[RunKindMismatch]");
  expect(r.stderr, r.shown).toMatch(message);
  expect(r.stderr.slice(r.stderr.indexOf("hint:")), r.shown).toContain(hint);
  expect(r.stderr, r.shown).not.toMatch(STACK_LINE);
  expect(snapshot(dir), r.shown).toEqual(before);
}

let dir: string;
let spec: string;
let experimentPlan: Plan;
let seedsPlan: Plan;

beforeAll(() => {
  dir = tempDir("reins-rundirs-");
  spec = experiment(join(dir, "exp"));
  for (const [out, extra] of [
    ["exp-plan.json", []],
    ["seeds-plan.json", ["--seeds", "1,2"]],
  ] as const) {
    const planned = reins(["plan", spec, ...extra, "--out", join(dir, out)]);
    expect(planned.code, planned.shown).toBe(0);
  }
  experimentPlan = JSON.parse(readFileSync(join(dir, "exp-plan.json"), "utf8")) as Plan;
  seedsPlan = JSON.parse(readFileSync(join(dir, "seeds-plan.json"), "utf8")) as Plan;
  expect(seedsPlan.seeds).toEqual([1, 2]);
}, 120_000);

/** A finished run directory as `reins run` or `reins eval` leaves it (`legacy`: as reins wrote it before it recorded runKind). */
function finishedRun(name: string, plan: Plan, command: "run" | "eval", opts: { legacy?: boolean } = {}): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, "plan.json"), `${JSON.stringify(plan, null, 2)}\n`);
  const kind = command === "run" ? "training" : "evaluation";
  const manifest = {
    planHash: plan.hash,
    createdAt: "2026-01-01T00:00:00.000Z",
    reins: "0.1.0",
    ...(opts.legacy ? {} : { runKind: kind }),
    argv: [command, spec, "--out", d],
  };
  writeFileSync(join(d, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  const summary =
    command === "run"
      ? { steps: 3, heldOut: { before: 0.25, after: 0.75, byHarness: {} }, interrupted: false, runDir: d, planHash: plan.hash, seed: plan.seed, seconds: 95 }
      : { rollouts: 0, errors: 0, meanReward: 0, runDir: d, planHash: plan.hash };
  writeFileSync(join(d, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(join(d, "rollouts.jsonl"), "");
  writeFileSync(join(d, "events.jsonl"), `${JSON.stringify({ t: "2026-01-01T00:00:00.000Z", type: "step-finished", step: 0 })}\n`);
  return d;
}

describe("a resume runs only the kind of run its directory holds", () => {
  it.each([
    ["as reins writes it now", false],
    ["as reins wrote it before it recorded the kind", true],
  ])(
    "reins eval --resume of a finished training run (reins run), %s: refused, summary.json untouched",
    (_how, legacy) => {
      const d = finishedRun(`training-${legacy ? "legacy" : "now"}`, experimentPlan, "run", { legacy });
      const summary = readFileSync(join(d, "summary.json"));
      expectKindRefused(["eval", "--resume", d], d, /holds a training run \(made by reins run\)/, `reins run --resume ${d}`);
      expect(readFileSync(join(d, "summary.json")).equals(summary)).toBe(true);
      expect(existsSync(join(d, "run.lock"))).toBe(false);
    },
    90_000,
  );

  it("reins run --resume of an evaluation made by reins eval: refused (before: NotAnExperiment or a training run in it)", () => {
    // A real `reins eval` directory: the kind is recorded in its manifest.json.
    const real = join(dir, "eval-real");
    const made = reins(["eval", EVAL_SPEC, "--out", real, "--quiet"]);
    expect(made.code, made.shown).toBe(0);
    expect(JSON.parse(readFileSync(join(real, "manifest.json"), "utf8"))).toMatchObject({ runKind: "evaluation" });
    expectKindRefused(["run", "--resume", real], real, /holds an evaluation \(made by reins eval\)/, `reins eval --resume ${real}`);
    // An evaluation of an Experiment (its plan could train): refused too, with or without the specs.
    const ofExperiment = finishedRun("eval-of-experiment", experimentPlan, "eval");
    expectKindRefused(["run", "--resume", ofExperiment], ofExperiment, /holds an evaluation/, `reins eval --resume ${ofExperiment}`);
    expectKindRefused(["run", spec, "--resume", ofExperiment], ofExperiment, /holds an evaluation/, `reins eval --resume ${ofExperiment}`);
    // The same kind still resumes: the finished evaluation runs nothing again and exits 0.
    const again = reins(["eval", "--resume", real, "--quiet", "--json"]);
    expect(again.code, again.shown).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ rollouts: 12 });
  }, 120_000);

  it("a multi-seed run directory is not resumed as one run, nor a one-seed run as several", () => {
    // Made by the runtime itself, as `reins run --seeds 1,2` makes it, then finished by hand.
    const seeds = join(dir, "seeds");
    openSeedsDirectory(seedsPlan, { out: seeds });
    mkdirSync(join(seeds, "seed-1"));
    writeFileSync(join(seeds, "summary.json"), `${JSON.stringify({ seeds: [1, 2], runDir: seeds, planHash: seedsPlan.hash })}\n`);
    // Resumed as what it is, it opens (what `reins run --resume DIR` does first).
    expect(openSeedsDirectory(seedsPlan, { resume: seeds })).toBe(seeds);
    expectKindRefused(["eval", "--resume", seeds], seeds, /holds a multi-seed training run \(seeds 1, 2; made by reins run\)/, `reins run --resume ${seeds}`);
    expectKindRefused(["run", spec, "--resume", seeds], seeds, /holds a multi-seed training run .*the plan given has one seed/, `reins run --resume ${seeds}`);
    // As reins wrote a multi-seed directory before it recorded the kind: plan.json (with seeds), no manifest.json.
    const legacy = join(dir, "seeds-legacy");
    mkdirSync(legacy);
    writeFileSync(join(legacy, "plan.json"), `${JSON.stringify(seedsPlan, null, 2)}\n`);
    writeFileSync(join(legacy, "summary.json"), `${JSON.stringify({ seeds: [1, 2] })}\n`);
    expectKindRefused(["eval", "--resume", legacy], legacy, /holds a multi-seed training run/, `reins run --resume ${legacy}`);
    // A one-seed training run resumed with a multi-seed plan.
    const single = finishedRun("single", experimentPlan, "run");
    expectKindRefused(
      ["run", spec, "--seeds", "1,2", "--resume", single],
      single,
      /holds a one-seed training run.*the plan given has seeds 1, 2/,
      `reins run --resume ${single}`,
    );
  }, 120_000);
});

/** Whether this process may mount a tmpfs (root, and a kernel that lets it); why not, when not. */
function mountProbe(): { ok: true } | { ok: false; why: string } {
  const probe = mkdtempSync(join(tmpdir(), "reins-mount-probe-"));
  try {
    const m = spawnSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], { encoding: "utf8" });
    if (m.status !== 0) return { ok: false, why: `mount -t tmpfs is not permitted here (${(m.stderr || m.error?.message || "").trim()})` };
    spawnSync("umount", [probe]);
    return { ok: true };
  } finally {
    rmdirSync(probe);
  }
}

const probe = mountProbe();
if (!probe.ok) console.warn(`skipping the full-disk tests: ${probe.why}; they need root to mount a small tmpfs`);

/** A tmpfs of `size` mounted on a fresh directory for `fn`, then unmounted and removed. */
async function withTinyDisk(size: string, fn: (mnt: string) => Promise<void> | void): Promise<void> {
  const mnt = mkdtempSync(join(tmpdir(), "reins-tinydisk-"));
  const m = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", mnt], { encoding: "utf8" });
  expect(m.status, m.stderr).toBe(0);
  try {
    await fn(mnt);
  } finally {
    spawnSync("umount", [mnt]);
    rmdirSync(mnt);
  }
}

/** Every file under `d`: no temporary file left, no stack trace, and each .jsonl file whole lines of JSON. */
function expectWhole(d: string): void {
  for (const [file, text] of Object.entries(snapshot(d))) {
    expect(file, "a temporary file was left").not.toMatch(/\.tmp-/);
    expect(text, `${file} holds a stack trace`).not.toMatch(STACK_LINE);
    if (file.endsWith(".jsonl") && text !== "") {
      expect(text.endsWith("\n"), `${file} ends in a torn line`).toBe(true);
      for (const line of text.split("\n").filter(Boolean)) expect(() => JSON.parse(line), `${file}: ${line.slice(0, 80)}`).not.toThrow();
    }
  }
}

describe.skipIf(!probe.ok)("a full disk while writing the run store", () => {
  it("reins eval on a 64 KiB disk: error[DiskFull] with a hint, exit 1, no stack, nothing half-written; resumed once space is made, it finishes", async () => {
    await withTinyDisk("64k", (mnt) => {
      const run = join(mnt, "run");
      const full = reins(["eval", EVAL_SPEC, "--out", run, "--quiet"]);
      expect(full.code, full.shown).toBe(1);
      expect(full.stderr, full.shown).toContain("error[DiskFull]");
      expect(full.stderr, full.shown).toMatch(/no space left/i);
      expect(full.stderr, full.shown).toMatch(/hint: .*(free|space).*--out/i);
      expect(full.stderr, full.shown).toContain(`--resume ${run}`);
      expect(full.stderr, full.shown).not.toMatch(STACK_LINE);
      expect(full.stderr, full.shown).not.toContain("internal error");
      expect(existsSync(join(run, "summary.json"))).toBe(false);
      expect(existsSync(join(run, "run.lock"))).toBe(false);
      expectWhole(run);
      // Space made: the resume runs what did not finish, and counts nothing twice.
      const grown = spawnSync("mount", ["-o", "remount,size=8m", mnt], { encoding: "utf8" });
      expect(grown.status, grown.stderr).toBe(0);
      const resumed = reins(["eval", "--resume", run, "--quiet", "--json"]);
      expect(resumed.code, resumed.shown).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ rollouts: 12 });
      const ids = readFileSync(join(run, "rollouts.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as RolloutResult).id);
      expect(new Set(ids).size).toBe(12);
      expect(ids).toHaveLength(12);
      expectWhole(run);
    });
  }, 240_000);

  it("the store on a full disk: each failed write is DiskFull and leaves its file as it was (no torn line, no temporary file)", async () => {
    await withTinyDisk("64k", (mnt) => {
      const d = join(mnt, "run");
      const store = RunStore.open(d, { hash: "sha256:0123456789abcdef" } as Plan, { resume: false }).store!;
      try {
        store.event({ type: "before" });
        // Fill what is left of the disk (tmpfs: in pages), then write past it.
        const filler = join(mnt, "filler");
        for (let n = 0; ; n++) {
          try {
            writeFileSync(filler, Buffer.alloc(4096), { flag: "a" });
          } catch (err) {
            expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
            break;
          }
          expect(n).toBeLessThan(64);
        }
        const events = readFileSync(join(d, "events.jsonl"));
        const big = "x".repeat(64 * 1024);
        const refusals = [
          () => store.event({ type: "big", text: big }),
          () => store.finish({ id: "r1", text: big } as unknown as RolloutResult, []),
          () => store.writeJson("summary.json", { text: big }),
          () => store.writeWorkspaceDiff("r1", { text: big }),
          () => store.writeHarnessOutput("r1", { stdout: big, stderr: "", stdoutTruncated: false, stderrTruncated: false }),
        ];
        for (const write of refusals) expect(write).toThrow(expect.objectContaining({ code: "DiskFull", hint: expect.stringMatching(/--out/) }));
        expect(readFileSync(join(d, "events.jsonl")).equals(events)).toBe(true);
        expect(existsSync(join(d, "rollouts.jsonl")) ? readFileSync(join(d, "rollouts.jsonl"), "utf8") : "").toBe("");
        expect(existsSync(join(d, "summary.json"))).toBe(false);
        expectWhole(d);
      } finally {
        store.close();
      }
    });
  }, 60_000);
});
