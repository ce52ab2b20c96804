/**
 * The steps of a plan (pure): which task × harness pairs each step runs, with deterministic
 * rollout ids. An Experiment's seed shuffles its training tasks (the task order) and deals each
 * step's tasks to the harnesses (harness-mix.ts); what a rollout samples follows from its id and
 * the onnx engine's seed (contract/seeds.ts, "sampling"); held-out
 * evaluations run every held-out task through every harness. An Evaluation is one step of every
 * task through every harness. Step hashes are left empty (hashSteps fills them in).
 */
import type { PlanPair, PlanRollout, PlanSchedule, PlanStep } from "../contract/plan.js";
import { seededStream } from "../contract/seeds.js";
import { dealHarnesses } from "./harness-mix.js";
import type { PlanTarget, TargetParts } from "./target.js";

export interface ScheduledSteps {
  steps: PlanStep[];
  /** The task × harness pairs in the order the steps first use them. */
  pairs: PlanPair[];
}

/** What a target runs: its steps for each of its seeds (the first seed's are the plan's), and what they are made from. */
export interface TargetSchedule {
  /** The plan's seed: the first of an Experiment's seeds, else its `seed` (default 0). */
  seed: number;
  /** One per seed (an Evaluation has one). */
  scheduled: ScheduledSteps[];
  /** An Experiment's: what each seed's steps are re-derived from (plan/seeds.ts). */
  schedule: PlanSchedule | undefined;
  /** Attempts per held-out or evaluated task × harness, unless a harness sets its own. */
  attempts: number;
}

export function scheduleTarget(target: PlanTarget, parts: TargetParts): TargetSchedule {
  const seed = parts.seeds?.[0] ?? target.spec.seed ?? 0;
  const harnesses = parts.harnesses.map(({ use }) => ({ name: use.name, weight: use.weight ?? 1, heldOutAttempts: use.heldOutAttempts }));
  if (target.kind === "Evaluation") {
    const attempts = target.spec.attempts ?? 1;
    return { seed, scheduled: [scheduleEvaluation(parts.selected, harnesses, attempts)], schedule: undefined, attempts };
  }
  const spec = target.spec;
  const attempts = spec.eval?.attempts ?? 1;
  const schedule: PlanSchedule = {
    training: parts.training,
    heldOut: parts.heldOut,
    steps: spec.steps,
    tasksPerStep: spec.tasksPerStep ?? parts.training.length,
    groupSize: parts.algorithm!.groupSize,
    evalEverySteps: spec.eval?.everySteps ?? 0,
    harnesses: harnesses.map((h) => ({ name: h.name, weight: h.weight, heldOutAttempts: h.heldOutAttempts ?? attempts })),
  };
  return { seed, scheduled: (parts.seeds ?? [seed]).map((s) => scheduleExperiment(schedule, s)), schedule, attempts };
}

/** An Experiment's steps for `seed`: an evaluation before training, the training steps, evaluations after. */
export function scheduleExperiment(s: PlanSchedule, seed: number): ScheduledSteps {
  const maker = stepMaker(s.harnesses);
  const perStep = Math.min(s.tasksPerStep, s.training.length);
  const order = shuffled(s.training, seed);
  const mix = dealHarnesses(
    s.harnesses.map((h) => h.weight),
    perStep,
    s.steps,
    seed,
  );
  const evalAttempts = (hi: number) => s.harnesses[hi]!.heldOutAttempts;
  const heldOut = everyHarness(s.heldOut, s.harnesses.length);
  if (s.heldOut.length > 0) maker.make("eval", heldOut, evalAttempts);
  for (let step = 0; step < s.steps; step++) {
    const pick: [string, number][] = [];
    for (let i = 0; i < perStep; i++) pick.push([order[(step * perStep + i) % order.length]!, mix[step]![i]!]);
    maker.make("sample", pick, () => s.groupSize);
    const last = step === s.steps - 1;
    if (s.heldOut.length > 0 && (last || (s.evalEverySteps > 0 && (step + 1) % s.evalEverySteps === 0))) maker.make("eval", heldOut, evalAttempts);
  }
  return { steps: maker.steps, pairs: maker.pairs };
}

/** An Evaluation's one step: every task through every harness, `attempts` times. */
export function scheduleEvaluation(tasks: readonly string[], harnesses: readonly { name: string; weight: number }[], attempts: number): ScheduledSteps {
  const maker = stepMaker(harnesses);
  maker.make("eval", everyHarness(tasks, harnesses.length), () => attempts);
  return { steps: maker.steps, pairs: maker.pairs };
}

/** Every task through every harness (by harness index). */
function everyHarness(tasks: readonly string[], harnesses: number): [string, number][] {
  return tasks.flatMap((t) => Array.from({ length: harnesses }, (_, hi): [string, number] => [t, hi]));
}

function stepMaker(harnesses: readonly { name: string; weight: number }[]) {
  const pairIndex = new Map<string, number>();
  const pairs: PlanPair[] = [];
  const steps: PlanStep[] = [];
  const addPair = (task: string, h: { name: string; weight: number }) => {
    const id = `${task}@${h.name}`;
    if (!pairIndex.has(id)) {
      pairIndex.set(id, pairs.length);
      pairs.push({ id, task, harness: h.name, weight: h.weight });
    }
    return pairIndex.get(id)!;
  };
  /** A step of `perPair(harness)` rollouts for each (task, harness index) pair, in the order given. */
  const make = (kind: PlanStep["kind"], groups: [string, number][], perPair: (harness: number) => number): void => {
    const index = steps.length;
    const rollouts: PlanRollout[] = [];
    for (const [task, hi] of groups) {
      const h = harnesses[hi]!;
      const p = addPair(task, h);
      const count = perPair(hi);
      for (let a = 0; a < count; a++) {
        const id = `s${index}-p${p}-a${a}`;
        rollouts.push({ id, pair: pairs[p]!.id, task, harness: h.name, attempt: a });
      }
    }
    steps.push({ index, kind, rollouts, hash: "" });
  };
  return { steps, pairs, make };
}

function shuffled<T>(list: readonly T[], seed: number): T[] {
  const out = [...list];
  const random = seededStream(seed, "task-order");
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
