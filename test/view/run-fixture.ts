/**
 * Writes a run directory the way the run store does (records through src/runtime/records' one
 * writer), for the viewer's tests and bench/view.ts: a plan, a manifest, training steps of GRPO
 * groups and held-out evaluations before and after, calls that form real prefix trees (a retried
 * call left as a dead leaf, a title call the filters drop), step metrics and events, harness
 * output, workspace diffs and the trainer's per-token logprobs, and a summary.json with the
 * held-out and fidelity reports. Token ids come from the
 * packaged Qwen3 tokenizer (the plan names it), so the viewer decodes them back to the text here.
 */
import { mkdirSync, writeFileSync, appendFileSync } from "node:fs";
import { join } from "node:path";
import { formatRecordLine } from "../../src/runtime/records/index.js";
import type { CallRecord, RolloutResult } from "../../src/runtime/records/index.js";
import { rng } from "../../src/compiler/contract/rng.js";
import type { ResolvedAlgorithm } from "../../src/compiler/contract/plan.js";
import { analyzeRollout, packTree } from "../../src/runtime/trajectories/index.js";

export interface FixtureOptions {
  /** Training steps (each: every pair × groupSize rollouts). */
  steps?: number;
  tasks?: number;
  harnesses?: string[];
  groupSize?: number;
  /** Encode text to token ids (default: one id per byte, 0–255). */
  encode?: (text: string) => number[];
  /** Extra rollouts to write after the run (hostile ids, a huge rollout). */
  extra?: { id: string; task: string; harness: string; step: number; calls: CallRecord[]; stdout?: string; reward?: number }[];
  /** Leave summary.json out (a run still going). */
  running?: boolean;
  /**
   * Also write what a run keeps beside its records (default true): each rollout's workspace diff
   * and, for training steps, the trainer's logprob of every trained token (the sampler's plus a
   * little noise, in the packed tree's order).
   */
  sideFiles?: boolean;
  /** The seed of the fixture's random draws (default 7): another seed, other pass rates. */
  seed?: number;
}

export interface Fixture {
  dir: string;
  rollouts: RolloutResult[];
  summary: {
    heldOut: { before: number; after: number; byHarness: Record<string, { before: number; after: number; n: number; gainStdErrors: number }> };
    fidelity: unknown;
  };
  taskNames: string[];
}

const byteEncode = (text: string) => [...Buffer.from(text, "utf8")];

/** One call record: prompt + completion ids, a logprob per completion id. */
export function callRecord(
  rolloutId: string,
  seq: number,
  promptIds: number[],
  completionIds: number[],
  random: () => number,
  extra: Partial<CallRecord> = {},
): CallRecord {
  return {
    v: 2,
    rolloutId,
    try: 1,
    seq,
    dialect: "openai-chat",
    model: "fixture-policy",
    stream: false,
    promptIds,
    completionIds,
    completionLogprobs: completionIds.map(() => -Math.round(random() * 3000) / 1000),
    finishReason: "stop",
    parse: { ok: true },
    callClass: "main",
    reused: seq > 0 ? [seq - 1] : [],
    tokenizedPromptTokens: promptIds.length,
    weightsVersion: "w0",
    timings: { receivedMs: 1_800_000_000_000 + seq * 1000, doneMs: 1_800_000_000_000 + seq * 1000 + 250 },
    ...extra,
  };
}

/** The calls of one agent rollout: ask, (retry), tool call, tool result, answer; sometimes a title call. */
export function agentCalls(id: string, task: string, passed: boolean, random: () => number, encode: (t: string) => number[]): CallRecord[] {
  const system = encode(
    `<|im_start|>system\nYou are a careful agent. Task ${task}.<|im_end|>\n<|im_start|>user\nWrite the answer into answer.txt.<|im_end|>\n<|im_start|>assistant\n`,
  );
  const toolCall = encode(`<tool_call>{"name": "write", "arguments": {"path": "answer.txt", "content": "${passed ? "yes" : "no"}"}}</tool_call><|im_end|>`);
  const toolResult = encode(`\n<|im_start|>user\n<tool_response>wrote answer.txt</tool_response><|im_end|>\n<|im_start|>assistant\n`);
  const answer = encode(`I wrote ${passed ? "yes" : "no"} into answer.txt.<|im_end|>`);
  const calls: CallRecord[] = [];
  let seq = 0;
  const retried = random() < 0.3;
  if (retried) calls.push(callRecord(id, seq++, system, encode(`<tool_call>{"name": "wri`), random, { finishReason: "length" }));
  calls.push(callRecord(id, seq++, system, toolCall, random, { finishReason: "tool_calls" }));
  if (random() < 0.3)
    calls.push(
      callRecord(id, seq++, encode(`<|im_start|>user\nTitle for: ${task}<|im_end|>\n<|im_start|>assistant\n`), encode(`Answer file<|im_end|>`), random, {
        callClass: "title",
      }),
    );
  calls.push(callRecord(id, seq++, [...system, ...toolCall, ...toolResult], answer, random));
  return calls;
}

/** A rollout's workspace diff (answer.txt written) and, when trained, its trainer logprobs. */
function writeSideFiles(
  dir: string,
  r: RolloutResult,
  calls: CallRecord[],
  filters: ResolvedAlgorithm["filters"],
  heldOut: boolean,
  random: () => number,
): void {
  const word = r.passed ? "yes" : "no";
  const diff = {
    formatVersion: 1,
    added: 1,
    modified: 0,
    deleted: 0,
    unchanged: 1,
    files: [
      {
        path: "answer.txt",
        status: "added",
        kind: "text",
        bytesBefore: null,
        bytesAfter: word.length + 1,
        patch: `--- /dev/null\n+++ b/answer.txt\n@@ -0,0 +1,1 @@\n+${word}\n`,
      },
    ],
  };
  mkdirSync(join(dir, "workspace-diff"), { recursive: true });
  writeFileSync(join(dir, "workspace-diff", `${r.id}.json`), JSON.stringify(diff));
  if (heldOut || r.step < 1 || calls.length === 0) return;
  const a = analyzeRollout(r.id, calls, filters);
  if (a.dropped) return;
  const packed = packTree(a.tree, a.filter, { rollout: r.id, task: r.task, harness: r.harness }, 0);
  const logprobs = packed.rolloutLogprobs.filter((_, i) => packed.lossMask[i] === 1).map((x) => Math.round((x + (random() - 0.5) * 0.04) * 1e5) / 1e5);
  mkdirSync(join(dir, "trainer-logprobs"), { recursive: true });
  appendFileSync(join(dir, "trainer-logprobs", `step-${r.step}.jsonl`), `${JSON.stringify({ rollout: r.id, leaf: null, logprobs })}\n`);
}

function verifierOf(passed: boolean) {
  return {
    status: "ok",
    reward: passed ? 1 : 0,
    passed,
    passThreshold: 1,
    parts: {
      checks: {
        score: passed ? 1 : 0,
        passed: passed ? 1 : 0,
        total: 1,
        results: [
          {
            type: "fileEquals",
            weight: 1,
            name: "fileEquals answer.txt",
            pass: passed,
            score: passed ? 1 : 0,
            reason: passed ? "answer.txt has the expected content." : "answer.txt differs from the expected content.",
          },
        ],
      },
    },
    weights: { checks: 1 },
    durationMs: 1,
  };
}

/** Write the run directory; returns what was written, for the tests to compare with. */
export function writeRunFixture(dir: string, options: FixtureOptions = {}): Fixture {
  const steps = options.steps ?? 3;
  const harnesses = options.harnesses ?? ["claude-code", "codex"];
  const groupSize = options.groupSize ?? 4;
  const encode = options.encode ?? byteEncode;
  const random = rng(options.seed ?? 7);
  const taskCount = options.tasks ?? 3;
  const taskNames = Array.from({ length: taskCount }, (_, i) => `write-word-${["yes", "ok", "done", "hi"][i % 4]}-${String(i).padStart(3, "0")}`);
  const heldOutNames = [`held-out-word-yes-000`, `held-out-word-no-001`];
  const category = (t: string) => (t.includes("yes") ? "productivity" : "writing");
  mkdirSync(join(dir, "harness-output"), { recursive: true });
  const sideFiles = options.sideFiles ?? true;
  const noise = rng(11);
  const plan = {
    planVersion: 1,
    kind: "Experiment",
    name: "view-fixture",
    tasks: [...taskNames, ...heldOutNames].map((name) => ({ name, category: category(name) })),
    heldOutTasks: heldOutNames,
    attempts: groupSize,
    model: { name: "fixture-policy", tokenizer: { type: "qwen3" } },
    algorithm: {
      type: "GRPO",
      groupSize,
      advantage: { normalizeStd: true, dropZeroVariance: true, positiveOnly: false, gamma: 1, lambda: 1 },
      filters: { dropDeadLeaves: true, dropClasses: ["subagent", "compaction", "title", "auxiliary"], maxBranches: 0 },
    },
  };
  writeFileSync(join(dir, "plan.json"), JSON.stringify(plan));
  writeFileSync(join(dir, "manifest.json"), JSON.stringify({ planHash: "sha256:fixture", createdAt: "2026-12-02T00:00:00.000Z", reins: "0.1.0" }));
  const rollouts: RolloutResult[] = [];
  const rolloutLines: string[] = [];
  const callLines: string[] = [];
  const events: string[] = [];
  const metrics: string[] = [];
  let clock = Date.parse("2026-12-02T00:00:00.000Z");
  const t = (advanceS: number) => new Date((clock += advanceS * 1000)).toISOString();
  const record = (
    id: string,
    step: number,
    task: string,
    harness: string,
    attempt: number,
    passed: boolean,
    calls: CallRecord[],
    stdout: string,
    reward?: number,
  ) => {
    const r: RolloutResult = {
      id,
      step,
      task,
      harness,
      pair: `${task}@${harness}`,
      attempt,
      category: category(task),
      status: "ok",
      reward: reward ?? (passed ? 1 : 0),
      passed,
      tries: 1,
      durationMs: 800 + Math.round(random() * 4000),
      phases: { createMs: 80, workspaceMs: 10, harnessMs: 700, verifyMs: 30, destroyMs: 2 },
      calls: calls.length,
      harnessExit: { code: 0, signal: null, timedOut: false } as RolloutResult["harnessExit"],
      verifier: verifierOf(passed),
      retries: [],
      finishedAt: t(1),
      weightsVersion: `w${Math.max(0, step)}`,
    };
    rollouts.push(r);
    if (sideFiles) writeSideFiles(dir, r, calls, plan.algorithm.filters as ResolvedAlgorithm["filters"], heldOutNames.includes(task), noise);
    for (const c of calls) callLines.push(formatRecordLine(c));
    rolloutLines.push(formatRecordLine(r));
    writeFileSync(join(dir, "harness-output", `${id}.stdout`), stdout);
    writeFileSync(join(dir, "harness-output", `${id}.stderr`), `harness ${harness} finished\n`);
  };
  const heldOut = (step: number, skill: number) => {
    events.push(JSON.stringify({ t: t(1), type: "step-started", step, rollouts: heldOutNames.length * harnesses.length * groupSize }));
    const byHarness: Record<string, { passRate: number; meanReward: number; rollouts: number }> = {};
    let passedAll = 0;
    let n = 0;
    harnesses.forEach((harness, h) => {
      let passedH = 0;
      heldOutNames.forEach((task, p) => {
        for (let a = 0; a < groupSize; a++) {
          const id = `s${step}-h${h}-p${p}-a${a}`;
          const passed = random() < skill - 0.1 * h;
          passedH += passed ? 1 : 0;
          record(id, step, task, harness, a, passed, agentCalls(id, task, passed, random, encode), `{"type":"result","rollout":"${id}"}\n`);
        }
      });
      const count = heldOutNames.length * groupSize;
      byHarness[harness] = { passRate: passedH / count, meanReward: passedH / count, rollouts: count };
      passedAll += passedH;
      n += count;
    });
    events.push(JSON.stringify({ t: t(30), type: "step-finished", step }));
    events.push(
      JSON.stringify({
        t: t(0),
        type: "held-out",
        step,
        trainedSteps: Math.max(0, step - 1),
        passRate: passedAll / n,
        meanReward: passedAll / n,
        rollouts: n,
        byHarness,
      }),
    );
    return { passRate: passedAll / n, byHarness };
  };
  const before = heldOut(0, 0.4);
  for (let step = 1; step <= steps; step++) {
    events.push(JSON.stringify({ t: t(1), type: "step-started", step, rollouts: taskNames.length * harnesses.length * groupSize }));
    const skill = 0.3 + (0.5 * step) / steps;
    taskNames.forEach((task, p) => {
      harnesses.forEach((harness, h) => {
        for (let a = 0; a < groupSize; a++) {
          const id = `s${step}-p${p}-h${h}-a${a}`;
          const passed = random() < skill;
          record(id, step, task, harness, a, passed, agentCalls(id, task, passed, random, encode), `{"type":"result","rollout":"${id}","ok":${passed}}\n`);
        }
      });
    });
    events.push(JSON.stringify({ t: t(20 + step * 5), type: "step-finished", step }));
    metrics.push(
      JSON.stringify({
        type: "step-metrics",
        step,
        trainingStep: step,
        meanReward: skill,
        passRate: skill,
        loss: -0.4 + 0.01 * step,
        kl: 0.001 * step,
        entropy: 0.5 - 0.02 * step,
        clipFraction: 0.01 * step,
        gradNorm: 0.1 / step,
        tokensPerSecond: 800 + 10 * step,
        trainedTokens: 5000 + step,
      }),
    );
  }
  const after = heldOut(steps + 1, 0.8);
  for (const x of options.extra ?? []) record(x.id, x.step, x.task, x.harness, 0, (x.reward ?? 0) >= 1, x.calls, x.stdout ?? "", x.reward ?? 0);
  appendFileSync(join(dir, "calls.jsonl"), callLines.join(""));
  appendFileSync(join(dir, "rollouts.jsonl"), rolloutLines.join(""));
  appendFileSync(join(dir, "events.jsonl"), events.map((e) => `${e}\n`).join(""));
  appendFileSync(join(dir, "metrics.jsonl"), metrics.map((e) => `${e}\n`).join(""));
  const summary: Fixture["summary"] = {
    heldOut: {
      before: before.passRate,
      after: after.passRate,
      byHarness: Object.fromEntries(
        harnesses.map((h) => [
          h,
          { before: before.byHarness[h].passRate, after: after.byHarness[h].passRate, n: before.byHarness[h].rollouts, gainStdErrors: 1.5 },
        ]),
      ),
    },
    fidelity: {
      byHarness: Object.fromEntries(
        harnesses.map((h, i) => [
          h,
          { rollouts: 100 + i, calls: 250 + i, prefixBreaks: i, mismatchedTrainedTokens: 0, checkedTrainedTokens: 4321 + i, templateMismatches: 0 },
        ]),
      ),
    },
  };
  const evaluations = [before, after].map((e, i) => ({
    type: "held-out",
    step: i === 0 ? 0 : steps + 1,
    passRate: e.passRate,
    rollouts: heldOutNames.length * harnesses.length * groupSize,
  }));
  if (!options.running)
    writeFileSync(
      join(dir, "summary.json"),
      JSON.stringify({ steps, ...summary, evaluations, runDir: dir, planHash: "sha256:fixture", seconds: 1234, interrupted: false }, null, 2),
    );
  return { dir, rollouts, summary, taskNames };
}

/**
 * A multi-seed run directory: its plan.json lists `seeds`, and each seed's run directory
 * <dir>/seed-<s> is a fixture run of its own draws; the seeds in `running` have no summary yet.
 */
export function writeSeedsFixture(
  dir: string,
  seeds: number[],
  options: FixtureOptions & { name?: string; running?: boolean; pending?: number[] } = {},
): Fixture[] {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "plan.json"),
    JSON.stringify({
      planVersion: 1,
      kind: "Experiment",
      name: options.name ?? "seeds-fixture",
      hash: "sha256:seeds-fixture",
      seed: seeds[0],
      seeds,
      tasks: [],
      heldOutTasks: [],
      steps: [],
      manifests: [],
    }),
  );
  return seeds.map((seed) => {
    const seedDir = join(dir, `seed-${seed}`);
    mkdirSync(seedDir);
    return writeRunFixture(seedDir, { ...options, seed, sideFiles: false, running: options.pending?.includes(seed) ?? false });
  });
}
