/**
 * No pickle from a run directory, and no path out of it. A run directory is data (copied, shared,
 * edited), and `reins run --resume` used to `torch.load` its checkpoints' trainer.pt, a pickle: a
 * crafted one ran code. Checkpoints are now safetensors and JSON (trainers/torch/checkpoint_io.py),
 * and the paths a resume reads back from events.jsonl are confined (control/checkpoint-paths.ts).
 * The stand-in for "any code" is a torch pickle whose `__reduce__` creates a marker file.
 *
 * - The worker: a checkpoint directory with a crafted trainer.pt (and an older reins's
 *   checkpoint.json) is refused on /restore and as the KL reference (CheckpointFormatOutdated); a
 *   crafted trainer.pt dropped into a checkpoint of this reins is ignored (the restore reads only
 *   checkpoint.json and the safetensors files); a damaged safetensors file is BadCheckpoint. The
 *   marker is never created.
 * - `reins run --resume` (the real process, on a tiny quickstart run killed after its first step):
 *   the last checkpoint replaced by an older reins's pickle → CheckpointFormatOutdated; events.jsonl
 *   pointing the checkpoint elsewhere (a copy of the real checkpoint plus the crafted pickle, in
 *   another directory), through a symlink in the run directory, through `..`, SFT's checkpoint
 *   elsewhere, or the served weights elsewhere → OutsideRunDirectory. Each: exit 1, the code and its
 *   hint, no stack, no marker, and no trainer worker started (trainer.log unchanged). The untampered
 *   run then resumes and finishes.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TrainerWorker } from "../../src/runtime/training/trainer-process.js";
import { events, experiment, runKilledAfterFirstStep, STACK_TRACE } from "../control/helpers.js";
import { reins as launch } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { ALGORITHM, makeTinyModel, PYTHON, randomTrees, startWorker, treeBatch, type TinyModel } from "../training/helpers.js";

/** Write a torch pickle at `file` whose loading creates `marker` (what a crafted checkpoint could run). */
function craftPickle(file: string, marker: string): void {
  const script = [
    "import sys, torch",
    "class Payload:",
    "    def __reduce__(self):",
    "        return (open, (sys.argv[2], 'w'))",
    "torch.save({'model': Payload(), 'optimizer': Payload(), 'step': 1, 'rng': Payload()}, sys.argv[1])",
  ].join("\n");
  execFileSync(PYTHON, ["-c", script, file, marker]);
}

/** A checkpoint directory as an older reins wrote it (trainer.pt + checkpoint.json), its pickle crafted. */
function legacyCheckpoint(dir: string, marker: string): void {
  mkdirSync(dir, { recursive: true });
  craftPickle(join(dir, "trainer.pt"), marker);
  writeFileSync(join(dir, "checkpoint.json"), JSON.stringify({ step: 1, weightsVersion: "0123456789abcdef", protocolVersion: 1 }));
}

async function refusal(p: Promise<unknown>): Promise<{ code?: string; workerCode?: string; message: string; hint?: string }> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e, "refused").not.toBeNull();
  return e as { code?: string; workerCode?: string; message: string; hint?: string };
}

describe("the trainer worker loads no pickle", () => {
  let model: TinyModel;
  let worker: TrainerWorker;
  let dir: string;

  beforeAll(async () => {
    dir = tempDir("reins-ckpt-worker-");
    model = makeTinyModel(5, dir);
    worker = await startWorker(model);
  });

  afterAll(async () => {
    await worker?.stop();
  });

  it("refuses an older reins's trainer.pt on /restore, running nothing", async () => {
    const marker = join(dir, "restore-ran");
    const legacy = join(dir, "legacy-restore");
    legacyCheckpoint(legacy, marker);
    const e = await refusal(worker.client.restore(legacy));
    expect(existsSync(marker), "the crafted pickle ran").toBe(false);
    expect(e.workerCode, e.message).toBe("CheckpointFormatOutdated");
    expect(e.message).toContain("pickle");
    expect(e.hint).toContain("no longer loads pickles");
    // The worker keeps serving.
    expect((await worker.client.health()).step).toBe(0);
  });

  it("refuses an older reins's trainer.pt as the KL reference, running nothing", async () => {
    const marker = join(dir, "reference-ran");
    const legacy = join(dir, "legacy-reference");
    legacyCheckpoint(legacy, marker);
    const kl = treeBatch(randomTrees(7, 2, model.vocabSize), { ...ALGORITHM, klCoef: 0.1 });
    const e = await refusal(worker.client.forwardBackward(kl, { referenceCheckpoint: legacy }));
    expect(existsSync(marker), "the crafted pickle ran").toBe(false);
    expect(e.workerCode, e.message).toBe("CheckpointFormatOutdated");
    expect((await worker.client.health()).step).toBe(0);
  });

  it("writes safetensors and JSON only, and ignores a pickle dropped into its checkpoint", async () => {
    await worker.client.forwardBackward(treeBatch(randomTrees(8, 2, model.vocabSize)));
    await worker.client.optimStep();
    const c = await worker.client.checkpoint();
    expect(readdirSync(c.path).sort()).toEqual(["checkpoint.json", "model.safetensors", "trainer.safetensors"]);
    const summary = JSON.parse(readFileSync(join(c.path, "checkpoint.json"), "utf8"));
    expect(summary).toMatchObject({ format: 2, step: 1, files: { model: "model.safetensors", trainer: "trainer.safetensors" } });
    expect(summary.optimizer.param_groups[0].betas).toEqual([0.9, 0.999]);
    // No pickle opcodes anywhere: every file is JSON, or a safetensors file (8-byte length, JSON header, raw numbers).
    for (const f of ["model.safetensors", "trainer.safetensors"]) {
      const bytes = readFileSync(join(c.path, f));
      const n = Number(bytes.readBigUInt64LE(0));
      const header = JSON.parse(bytes.subarray(8, 8 + n).toString("utf8"));
      expect(Object.keys(header).length).toBeGreaterThan(1);
    }

    const marker = join(dir, "dropped-ran");
    craftPickle(join(c.path, "trainer.pt"), marker);
    const r = await worker.client.restore(c.path).catch((err: Error) => err);
    expect(existsSync(marker), "the crafted pickle ran").toBe(false);
    expect(r).toMatchObject({ step: 1 });

    // A damaged tensor file is refused in words, not loaded.
    const damaged = join(dir, "damaged");
    cpSync(c.path, damaged, { recursive: true });
    const bytes = readFileSync(join(damaged, "trainer.safetensors"));
    writeFileSync(join(damaged, "trainer.safetensors"), bytes.subarray(0, bytes.length - 16));
    const e = await refusal(worker.client.restore(damaged));
    expect(e.workerCode, e.message).toBe("BadCheckpoint");
  });
});

describe("reins run --resume reads checkpoints only of its run, never a pickle", () => {
  let root: string;
  let runDir: string;
  let file: string;
  let original: string;
  let trainerLog: string;
  let last: any;
  let sft: any;
  const markers: string[] = [];

  function reins(args: string[]) {
    const r = launch(args, { timeout: 300_000, env: { REINS_DEBUG: "" } });
    return { ...r, shown: `reins ${args.join(" ")}\nexit ${r.code}\n${r.stderr}` };
  }

  /** events.jsonl with the last checkpoint event (or SFT's) changed by `edit`. */
  function withEvents(edit: (e: any) => void, which: "last" | "sft" = "last"): void {
    const lines = original
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const target = which === "last" ? lines.filter((e) => e.type === "checkpoint").at(-1) : lines.find((e) => e.type === "checkpoint" && e.phase === "sft");
    edit(target);
    writeFileSync(join(runDir, "events.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
  }

  /**
   * `reins run --resume` is refused with `code`: exit 1, its hint, no stack, the crafted pickle's
   * `marker` not created, no trainer worker started. events.jsonl is restored afterwards.
   */
  function expectRefused(code: string, message: RegExp, marker: string): void {
    const logBefore = existsSync(trainerLog) ? readFileSync(trainerLog, "utf8") : "";
    try {
      const r = reins(["run", "--resume", runDir]);
      expect(existsSync(marker), `${r.shown}\nthe crafted pickle ran`).toBe(false);
      expect(r.code, r.shown).toBe(1);
      expect(r.stderr, r.shown).toContain(`error[${code}]`);
      expect(r.stderr, r.shown).toMatch(message);
      expect(r.stderr.slice(r.stderr.indexOf("hint:")), r.shown).toMatch(/^hint:[\s\S]*start a new run/i);
      expect(r.stderr, r.shown).not.toMatch(STACK_TRACE);
      expect(r.stderr, r.shown).not.toContain("resumed from the checkpoint");
      expect(existsSync(trainerLog) ? readFileSync(trainerLog, "utf8") : "", "no trainer worker started").toBe(logBefore);
    } finally {
      writeFileSync(join(runDir, "events.jsonl"), original);
    }
  }

  beforeAll(async () => {
    root = tempDir("reins-ckpt-run-");
    file = experiment(root);
    runDir = join(root, "run");
    const tmp = join(root, "tmp");
    mkdirSync(tmp);
    await runKilledAfterFirstStep(file, runDir, tmp);
    original = readFileSync(join(runDir, "events.jsonl"), "utf8");
    const checkpoints = events(runDir).filter((e) => e.type === "checkpoint");
    last = checkpoints.at(-1);
    sft = checkpoints.find((e) => e.phase === "sft");
    expect(last.phase).toBe("step");
    expect(sft).toBeDefined();
    trainerLog = join(runDir, "trainer.log");
  }, 600_000);

  it("refuses a checkpoint an older reins wrote as a pickle (trainer.pt), loading nothing", () => {
    const marker = join(root, "legacy-pickle-ran");
    markers.push(marker);
    const aside = `${last.path}.aside`;
    renameSync(last.path, aside);
    try {
      legacyCheckpoint(last.path, marker);
      expectRefused("CheckpointFormatOutdated", /pickle format \(trainer\.pt\)/, marker);
    } finally {
      rmSync(last.path, { recursive: true, force: true });
      renameSync(aside, last.path);
    }
  }, 120_000);

  it("refuses checkpoint and weights paths outside the run directory, loading nothing", () => {
    // A valid-looking checkpoint elsewhere: a copy of the run's own, with the crafted pickle beside it.
    const marker = join(root, "elsewhere-pickle-ran");
    markers.push(marker);
    const elsewhere = join(tempDir("reins-elsewhere-"), "step-1");
    cpSync(last.path, elsewhere, { recursive: true });
    craftPickle(join(elsewhere, "trainer.pt"), marker);
    legacyCheckpoint(join(elsewhere, "..", "legacy"), marker);

    withEvents((e) => (e.path = elsewhere));
    expectRefused("OutsideRunDirectory", /outside the run/, marker);
    withEvents((e) => (e.path = join(elsewhere, "..", "legacy")));
    expectRefused("OutsideRunDirectory", /outside the run/, marker);
    // Inside by its words, outside through a symlink.
    const link = join(runDir, "checkpoints", "linked");
    symlinkSync(join(elsewhere, "..", "legacy"), link);
    try {
      withEvents((e) => (e.path = link));
      expectRefused("OutsideRunDirectory", /resolves to .*legacy, outside the run/, marker);
    } finally {
      rmSync(link);
    }
    // Climbing out with `..`.
    withEvents((e) => (e.path = `${join(runDir, "checkpoints")}/${relative(join(runDir, "checkpoints"), elsewhere)}`));
    expectRefused("OutsideRunDirectory", /without \. or \.\. segments/, marker);
    withEvents((e) => (e.path = "checkpoints/step-1"));
    expectRefused("OutsideRunDirectory", /not an absolute path/, marker);
    // SFT's checkpoint (the KL term's reference) and the weights that serve again.
    withEvents((e) => (e.path = join(elsewhere, "..", "legacy")), "sft");
    expectRefused("OutsideRunDirectory", /SFT's checkpoint/, marker);
    withEvents((e) => (e.weightsDir = elsewhere));
    expectRefused("OutsideRunDirectory", /weightsDir/, marker);
  }, 300_000);

  it("resumes the untampered run to its end", () => {
    expect(readFileSync(join(runDir, "events.jsonl"), "utf8")).toBe(original);
    const r = reins(["run", "--resume", runDir, "--json"]);
    expect(r.code, r.shown).toBe(0);
    expect(r.stderr).toContain(`resumed from the checkpoint of step ${last.step}`);
    expect(JSON.parse(r.stdout).steps).toBe(3);
    for (const m of markers) expect(existsSync(m), m).toBe(false);
  }, 600_000);
});
