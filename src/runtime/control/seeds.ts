/**
 * `reins run` of a multi-seed plan: its seeds one after another (a machine's cores go to one run
 * at a time), each an ordinary run directory <dir>/seed-<s> with its own plan (the compiler's
 * planForSeed: the plan the Experiment has with `seed: s`), then <dir>/summary.json with the spread
 * over the seeds (seed-summary.ts). <dir>/plan.json holds the multi-seed plan, so `--resume <dir>`
 * runs it again: a finished seed (its summary.json, not interrupted) is skipped, an unfinished one
 * resumes from its own directory with the plan stored there.
 *
 * The policy: one reins creates (its directory holds none yet, or only the untrained initial policy
 * an earlier run created with its own seed) is created per seed, with that seed, in the sibling
 * directory <policy>-seed-<s>, so that no seed starts from another's weights; trained weights or a
 * model reins did not make are every seed's starting point. Seeds that create their policy share the
 * tokenizer corpus its BPE merges are learned from (sft.ts replays the references for it) whenever
 * their reference replays are the same ones: the same training tasks with references, and no
 * per-harness sample of them (`sftReferences`, drawn from the seed). The first such seed's corpus
 * is kept in <dir>/tokenizer-corpus/, so a resumed run shares it too.
 */
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { digestOf, isReinsError, planForSeed, ReinsError, type Plan } from "../../compiler/index.js";
import { lockRun } from "../store/run-lock.js";
import { writeAtomic } from "../store/run-store.js";
import { runExperiment, type LoopOptions } from "./experiment.js";
import { finishPlan } from "./plan.js";
import { hasPolicy, policyDirOf, trainedSteps } from "./policy.js";
import { buildRunManifest, checkRunKind, openRun, readRunPlan } from "./run-directory.js";
import { readFinishedSummary, runSummary, type RunSummary } from "./run-summary.js";
import { summarizeSeeds, type SeedsSummary } from "./seed-summary.js";

export interface SeedsOptions extends Omit<LoopOptions, "plan" | "store" | "tokenizerCorpus"> {
  /** A multi-seed plan (`seeds`). */
  plan: Plan;
  /** Its directory (openSeedsDirectory). */
  dir: string;
  /** The command line, recorded in each seed's manifest.json. */
  argv?: readonly string[];
  /** Before each seed: it runs afresh, resumes its run directory, or was finished before. */
  onSeed?: (e: { seed: number; index: number; of: number; dir: string; action: "run" | "resume" | "done" }) => void;
}

export interface SeedsOutcome {
  /** Every seed's numbers and their spread; null when the run was interrupted before the last seed finished. */
  summary: SeedsSummary | null;
  /** Each finished seed's own summary (its summary.json), in the order of the seeds. */
  runs: RunSummary[];
  interrupted: boolean;
}

/**
 * A multi-seed plan's directory: <out> (new: plan.json, and manifest.json with runKind
 * "training-seeds"), or <resume> (a multi-seed run's directory whose plan.json is this plan).
 */
export function openSeedsDirectory(plan: Plan, opts: { out?: string; resume?: string; argv?: readonly string[] }): string {
  if (!plan.seeds) throw new Error(`openSeedsDirectory: plan ${plan.name} has no seeds`);
  const dir = resolve(opts.resume ?? opts.out ?? `runs/${plan.name}-${new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19)}`);
  const file = join(dir, "plan.json");
  if (opts.resume !== undefined) {
    const stored = readRunPlan(dir);
    checkRunKind(dir, "training-seeds", plan.seeds);
    if (stored.hash !== plan.hash) {
      throw new ReinsError(
        "PlanChanged",
        `${dir} ran another plan: the specs or plan file changed (plan ${stored.hash.slice(7, 19)} → ${plan.hash.slice(7, 19)}).`,
        "Resume with the same specs, or start a new run with --out.",
      );
    }
    return dir;
  }
  if (existsSync(file)) throw new ReinsError("RunExists", `${dir} already holds a run.`, `Resume it with --resume ${dir}, or choose another --out directory.`);
  mkdirSync(dir, { recursive: true });
  writeAtomic(file, `${JSON.stringify(plan, null, 2)}\n`);
  const manifest = { planHash: plan.hash, createdAt: new Date().toISOString(), runKind: "training-seeds", ...buildRunManifest(opts.argv ?? []) };
  writeAtomic(join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return dir;
}

/** The run directory of `seed` in a multi-seed run's directory. */
export function seedRunDir(dir: string, seed: number): string {
  return join(dir, `seed-${seed}`);
}

export async function runSeeds(o: SeedsOptions): Promise<SeedsOutcome> {
  const { plan, dir } = o;
  const seeds = plan.seeds;
  if (!seeds) throw new Error(`runSeeds: plan ${plan.name} has no seeds`);
  const lock = lockRun(dir);
  const runs: RunSummary[] = [];
  try {
    for (const [index, seed] of seeds.entries()) {
      const seedDir = seedRunDir(dir, seed);
      const done = readFinishedSummary(seedDir);
      const resume = existsSync(join(seedDir, "plan.json"));
      o.onSeed?.({ seed, index, of: seeds.length, dir: seedDir, action: done ? "done" : resume ? "resume" : "run" });
      if (done) {
        runs.push(done);
        continue;
      }
      const seedPlan = resume ? readRunPlan(seedDir) : finishPlan(planForSeed(plan, seed, policyFor(plan, seed)));
      const summary = await runSeed(o, seedPlan, seedDir, resume);
      if (summary.interrupted) return { summary: null, runs, interrupted: true };
      runs.push(summary);
    }
  } finally {
    lock.release();
  }
  const summary = summarizeSeeds(
    runs.map((r, i) => ({ ...r, seed: seeds[i]! })),
    { runDir: dir, planHash: plan.hash },
  );
  writeAtomic(join(dir, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
  return { summary, runs, interrupted: false };
}

/**
 * One seed's run in its own run directory; its summary.json is written, interrupted or not. When
 * it creates its policy, it takes the tokenizer corpus of an earlier seed with the same reference
 * replays (kept in <dir>/tokenizer-corpus/), or leaves its own there for the next ones.
 */
async function runSeed(o: SeedsOptions, plan: Plan, dir: string, resume: boolean): Promise<RunSummary> {
  const creates = createdPolicyDir(plan);
  const replays = referenceReplays(plan);
  const shared = creates && replays ? join(o.dir, "tokenizer-corpus", `${shortDigest(replays)}.txt`) : undefined;
  const tokenizerCorpus = shared && existsSync(shared) ? shared : undefined;
  const started = Date.now();
  const store = openRun(plan, { ...(resume ? { resume: dir } : { out: dir }), argv: o.argv ?? [], kind: "training" });
  try {
    const { onSeed: _s, dir: _d, argv: _a, plan: _p, ...loop } = o;
    const outcome = await runExperiment({ ...loop, plan, store, ...(tokenizerCorpus ? { tokenizerCorpus } : {}) });
    const summary = runSummary(outcome, plan, started);
    store.writeJson("summary.json", summary);
    return summary;
  } catch (err) {
    store.event({ type: "run-stopped", code: isReinsError(err) ? err.code : "InternalError", message: (err as Error)?.message ?? String(err) });
    throw err;
  } finally {
    store.close();
    // The policy this run created learned from its own corpus (finished, stopped or interrupted): the next seeds share it.
    const own = creates && `${creates}.corpus.txt`;
    if (shared && !tokenizerCorpus && own && hasPolicy(creates) && existsSync(own)) {
      mkdirSync(dirname(shared), { recursive: true });
      copyFileSync(own, shared);
    }
  }
}

/** Where seed `seed` finds its initial policy: its own sibling directory when reins creates the policy. */
export function policyFor(plan: Plan, seed: number): { policyDir?: { from: string; to: string } } {
  const from = createdPolicyDir(plan) ?? untrainedInitialPolicy(plan);
  return from ? { policyDir: { from, to: `${from}-seed-${seed}` } } : {};
}

/**
 * The policy directory the run creates the policy in (as `reins run` does: no policy there yet, and
 * for a served model no checkpoint either), or undefined: a policy that exists, or an engine whose
 * server says which model it serves.
 */
function createdPolicyDir(plan: Plan): string | undefined {
  const engine = plan.model?.engine;
  const dir = engine?.type === "onnx" ? policyDirOf(engine.modelPath) : engine?.type === "vllm" && engine.serve ? engine.serve.modelPath : undefined;
  if (!dir || hasPolicy(dir) || (engine!.type !== "onnx" && existsSync(join(dir, "config.json")))) return undefined;
  return dir;
}

/**
 * An onnx policy directory that holds the initial policy reins created on an earlier run (its READY
 * marker, no trained.json): made with that run's seed, so each seed makes its own instead.
 */
function untrainedInitialPolicy(plan: Plan): string | undefined {
  const engine = plan.model?.engine;
  if (engine?.type !== "onnx") return undefined;
  const dir = policyDirOf(engine.modelPath);
  return hasPolicy(dir) && trainedSteps(dir) === 0 ? dir : undefined;
}

/**
 * What the SFT reference replays of a plan are (the training tasks that have a reference), as a
 * key; undefined when there are none, or when a harness replays a seeded sample of them.
 */
function referenceReplays(plan: Plan): string | undefined {
  if (!plan.sft || plan.sft.referencesPerHarness) return undefined;
  const held = new Set(plan.heldOutTasks);
  const names = plan.tasks.filter((t) => !held.has(t.name) && t.reference && t.reference.length > 0).map((t) => `${t.name}:${t.digest}`);
  return names.length > 0 ? JSON.stringify(names.sort()) : undefined;
}

function shortDigest(value: string): string {
  return digestOf(value).slice("sha256:".length, "sha256:".length + 16);
}
