/**
 * The SFT warm-up of `reins run`: the tasks' reference solutions replayed through the harnesses
 * (the reference engine), the passing trajectories fitted with the "sft" objective, environment
 * tokens masked. Before the policy exists, the same replay with a byte-level bootstrap tokenizer
 * gives the text its tokenizer learns BPE merges from. `sft.when` decides whether SFT runs at all:
 * `always`, or `if-untrained` (the default), which skips it when the policy's directory holds
 * trained weights (policy.ts: a trained.json the trainer writes after ≥ 1 optimizer step).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Plan, PlanRollout, ResolvedModel, ScriptedTurn } from "../../compiler/contract/plan.js";
import { shuffledIndexes } from "../../compiler/contract/rng.js";
import { seededStream } from "../../compiler/contract/seeds.js";
import { createExecutor, type Executor } from "../executor/executor.js";
import { loadModelRuntime } from "../model/model-runtime.js";
import type { SandboxProvider } from "../sandbox/provider.js";
import type { RolloutResult } from "../records/index.js";
import { RunStore } from "../store/run-store.js";
import type { TrainerHandle } from "../training/trainer-process.js";
import { decideBadStep, DEFAULT_BAD_STEP_POLICY, describeSkip, refuseNonFinite, stopAtBadStep, type SkipEvent } from "./bad-step.js";
import { buildSftBatch } from "./batches.js";
import { checkSftBatch, describeMismatch, recordCheck } from "./fidelity.js";
import { LoopError } from "./loop-error.js";
import { ensureInitialPolicy, trainedSteps } from "./policy.js";
import { ReferenceEngine } from "./reference-engine.js";
import { ReferenceToolError, referenceTurnsFor } from "./reference-tools.js";
import { createLossWindow, describeTargetStop, reachedTargetLoss } from "./sft-stop.js";
import { applyStep } from "./train-step.js";

/** BPE merges learned for the policy's tokenizer (from the harness's own text, see tokenizerCorpus). */
export const TOKENIZER_MERGES = 400;

/** What SFT needs from the run: where rollouts run, and where progress goes. */
export interface SftContext {
  plan: Plan;
  provider: SandboxProvider;
  onEvent?: (e: { type: string; [k: string]: unknown }) => void;
  signal?: AbortSignal;
  log: (line: string) => void;
  warn: (line: string) => void;
}

export interface SftOutcome {
  rollouts: number;
  passed: number;
  sequences: number;
  steps: number;
}

/** Whether this run trains SFT: `run`, or why not (`skip` is recorded as an sft-skipped event). */
export type SftDecision = { action: "none" } | { action: "done" } | { action: "run" } | { action: "skip"; reason: string };

export function decideSft(sft: Plan["sft"], o: { policyDir: string; sftDone: boolean }): SftDecision {
  if (!sft) return { action: "none" };
  if (o.sftDone) return { action: "done" };
  if (sft.when === "always") return { action: "run" };
  const steps = trainedSteps(o.policyDir);
  if (steps > 0)
    return {
      action: "skip",
      reason: `the policy in ${o.policyDir} has trained weights (${steps} optimizer step${steps === 1 ? "" : "s"}, trained.json) and sft.when is if-untrained`,
    };
  return { action: "run" };
}

/** The reference rollouts of an SFT stage: each training task with a reference × each model-calling harness. */
export function sftRollouts(plan: Plan): { rollouts: PlanRollout[]; scriptOf: Map<string, { key: string; turns: ScriptedTurn[] }> } {
  const held = new Set(plan.heldOutTasks);
  const tasks = plan.tasks.filter((t) => !held.has(t.name) && t.reference && t.reference.length > 0);
  const rollouts: PlanRollout[] = [];
  const scriptOf = new Map<string, { key: string; turns: ScriptedTurn[] }>();
  // A harness with a reference limit replays a seeded sample of the tasks, the same in every run of the plan.
  const order = shuffledIndexes(tasks.length, seededStream(plan.seed, "sft-replay-order"));
  const limited = new Map(Object.entries(plan.sft?.referencesPerHarness ?? {}).map(([h, n]) => [h, new Set(order.slice(0, n))]));
  tasks.forEach((t, i) => {
    for (const h of plan.harnesses.filter((x) => x.dialect && (limited.get(x.name)?.has(i) ?? true))) {
      const id = `sft-${i}-${h.name}`;
      rollouts.push({ id, pair: `${t.name}@${h.name}`, task: t.name, harness: h.name, attempt: 0 });
      const servers = [...(t.mcpServers ?? []), ...(h.mcpServers ?? [])].map((s) => s.name);
      scriptOf.set(id, { key: id, turns: mappedReference(t.reference!, h, servers) });
    }
  });
  return { rollouts, scriptOf };
}

function mappedReference(turns: ScriptedTurn[], harness: Plan["harnesses"][number], mcpServers: string[]): ScriptedTurn[] {
  try {
    return referenceTurnsFor(turns, harness, mcpServers);
  } catch (e) {
    if (!(e instanceof ReferenceToolError)) throw e;
    throw new LoopError(
      "ReferenceToolInvalid",
      `A reference solution cannot be replayed through ${harness.name}: ${e.message}.`,
      "Fix the harness's referenceTools templates (they may name only the reins tool's arguments).",
    );
  }
}

/**
 * Before the policy exists: replay the reference solutions through the harness with a byte-level
 * bootstrap tokenizer, and return the text the harness and the model exchanged (a file), from
 * which the policy's tokenizer learns its BPE merges. Shorter sequences make every later stage
 * faster, and the model then picks whole words instead of spelling them byte by byte.
 */
export async function tokenizerCorpus(c: SftContext, policyDir: string, python: string): Promise<string | undefined> {
  const { plan } = c;
  const { rollouts, scriptOf } = sftRollouts(plan);
  if (rollouts.length === 0) return undefined;
  const bootDir = mkdtempSync(join(tmpdir(), "reins-bootstrap-policy-"));
  try {
    await ensureInitialPolicy(join(bootDir, "policy"), { seed: plan.seed, python });
    const model = plan.model!;
    const bootModel: ResolvedModel = { ...model, tokenizer: { type: "file", path: join(bootDir, "policy", "tokenizer.json") } };
    const runtime = await loadModelRuntime(bootModel);
    const engine = new ReferenceEngine({ model: bootModel, runtime }, (rolloutId) => scriptOf.get(rolloutId));
    const store = RunStore.open(join(bootDir, "run"), plan, { resume: false }).store!;
    const exec = await createExecutor({
      plan,
      store,
      provider: c.provider,
      engine,
      model: bootModel,
      ...(c.onEvent ? { onEvent: c.onEvent } : {}),
      ...(c.signal ? { signal: c.signal } : {}),
    });
    let calls: ReturnType<Executor["calls"]>;
    try {
      const phase = { type: "progress", phase: "tokenizer-corpus", label: "tokenizer corpus: reference replays", unit: "rollouts", total: rollouts.length };
      c.onEvent?.({ ...phase, done: 0 });
      const results = await exec.runRollouts(rollouts, -1);
      c.onEvent?.({ ...phase, done: rollouts.length });
      calls = exec.calls(results.map((r) => r.id));
    } finally {
      await exec.close();
      store.close();
    }
    const text = calls.map((call) => runtime.tokenizer.decode([...call.promptIds, ...call.completionIds])).join("\n");
    mkdirSync(dirname(policyDir), { recursive: true });
    const file = `${policyDir}.corpus.txt`;
    writeFileSync(file, text);
    c.log(`learned the tokenizer's corpus from ${rollouts.length} reference rollouts through the harness (${text.length} characters)`);
    return file;
  } finally {
    rmSync(bootDir, { recursive: true, force: true });
  }
}

/** The SFT steps: replay the references, then `sft.steps` optimizer steps on the passing ones. Publishes nothing. */
export async function runSft(c: SftContext, store: RunStore, worker: TrainerHandle, serving: string): Promise<SftOutcome | null> {
  const { plan, log, warn } = c;
  const policy = plan.onBadStep ?? DEFAULT_BAD_STEP_POLICY;
  const sft = plan.sft!;
  const { rollouts, scriptOf } = sftRollouts(plan);
  log(`SFT: replaying ${rollouts.length} reference solutions through the harness`);
  const model = plan.model!;
  const runtime = await loadModelRuntime(model);
  const reference = new ReferenceEngine({ model, runtime }, (rolloutId) => scriptOf.get(rolloutId));
  const exec: Executor = await createExecutor({
    plan,
    store,
    provider: c.provider,
    engine: reference,
    ...(c.onEvent ? { onEvent: c.onEvent } : {}),
    ...(c.signal ? { signal: c.signal } : {}),
  });
  let results: RolloutResult[];
  let calls: ReturnType<Executor["calls"]>;
  try {
    const phase = { type: "progress", phase: "sft-replay", label: "SFT reference replays", unit: "rollouts", total: rollouts.length };
    const done = store.finishedIds();
    c.onEvent?.({ ...phase, done: rollouts.filter((r) => done.has(r.id)).length });
    results = await exec.runRollouts(rollouts, -1);
    if (!c.signal?.aborted) c.onEvent?.({ ...phase, done: rollouts.length });
    calls = exec.calls(results.map((r) => r.id));
  } finally {
    await exec.close();
  }
  // Interrupted while replaying: nothing to conclude from the replays that did not run.
  if (c.signal?.aborted) return null;
  const passedResults = results.filter((r) => r.passed);
  const passed = passedResults.length;
  if (passed === 0)
    throw new LoopError(
      "NoSftData",
      "No reference rollout passed its verifier, so there is nothing to fine-tune on.",
      "Check the tasks' reference solutions with reins eval.",
    );
  const size = sft.batchSize > 0 ? Math.min(sft.batchSize, passed) : passed;
  const random = seededStream(plan.seed, "sft-subsets");
  const full = buildSftBatch(plan.algorithm!, passedResults, calls);
  const trees = full.trees ?? [];
  const sequences = trees.reduce((n, t) => n + (t.leaves ?? 0), 0);
  const treeTokens = trees.reduce((n, t) => n + t.tokens.length, 0);
  // Every SFT step trains a sample of this tree's sequences: checked once, token by token.
  const check = checkSftBatch(plan.algorithm!, full, passedResults, calls);
  recordCheck(store, "sft", -1, check);
  const mismatch = describeMismatch(check, "SFT");
  if (mismatch) warn(mismatch);
  log(
    `SFT: ${passed}/${results.length} reference rollouts passed their verifier; ${sequences} sequences (${trees.length === 1 ? "one tree" : `${trees.length} trees`} of ${treeTokens} tokens), ${sft.steps} steps of ${size}`,
  );
  let last: Record<string, unknown> = {};
  let streak = 0;
  let skipped = 0;
  let steps = sft.steps;
  let stoppedAt: number | undefined;
  const window = createLossWindow();
  const progress = (done: number) => c.onEvent?.({ type: "progress", phase: "sft", label: "SFT", unit: "steps", total: sft.steps, done });
  progress(0);
  for (let s = 0; s < sft.steps && !c.signal?.aborted; s++) {
    const batch = size === passed ? full : buildSftBatch(plan.algorithm!, sample(passedResults, size, random), calls);
    const what = `SFT step ${s + 1}/${sft.steps}`;
    const applied = await applyStep(worker, batch, { fb: { objective: "sft" }, learningRate: sft.learningRate, betas: sft.adamBetas });
    if ("bad" in applied) {
      const kept = `SFT publishes nothing before it ends; the weights ${serving} keep serving.`;
      if (decideBadStep(policy, streak) === "stop")
        throw stopAtBadStep(applied.bad, { what, kept, policy, previousSkips: streak, learningRate: "sft.learningRate" });
      streak++;
      skipped++;
      const ev: SkipEvent = {
        type: "step-skipped",
        phase: "sft",
        step: s + 1,
        code: applied.bad.code,
        reason: applied.bad.reason,
        version: serving,
        consecutive: streak,
        maxSkips: policy.maxSkips,
      };
      store.event({ ...ev });
      warn(describeSkip(ev, what));
      progress(s + 1);
      continue;
    }
    refuseNonFinite(what, { loss: applied.fb.loss, gradNorm: applied.opt.gradNorm }, true);
    streak = 0;
    last = applied.fb;
    progress(s + 1);
    const mean = window.add(Number(applied.fb.loss));
    if (reachedTargetLoss(mean, sft.targetLoss)) {
      log(describeTargetStop(mean!, sft.targetLoss!, s + 1, sft.steps));
      [steps, stoppedAt] = [s + 1, mean];
      progress(sft.steps);
      break;
    }
    const every = Math.max(1, Math.floor(sft.steps / 5));
    if ((s + 1) % every === 0 && s + 1 < sft.steps) log(`SFT step ${s + 1}/${sft.steps}: loss ${Number(applied.fb.loss).toFixed(4)}`);
  }
  if (c.signal?.aborted) return null; // an unfinished SFT is redone on resume: no sft event
  // `steps`: the steps SFT ran (fewer than sft.steps when it stopped at sft.targetLoss, with the window's mean loss).
  store.event({
    type: "sft",
    rollouts: results.length,
    passed,
    sequences,
    steps,
    skipped,
    lastLoss: last.loss ?? null,
    ...(stoppedAt === undefined ? {} : { targetLoss: sft.targetLoss, windowLoss: stoppedAt }),
  });
  return { rollouts: results.length, passed, sequences, steps };
}

function sample<T>(list: readonly T[], k: number, random: () => number): T[] {
  const pool = [...list];
  const out: T[] = [];
  while (out.length < k && pool.length > 0) out.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  return out;
}
