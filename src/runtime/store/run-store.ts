/**
 * The run store: one directory per run.
 *   plan.json       the exact plan (written once; a resumed run must match its hash)
 *   manifest.json   versions, git commit, spec digests, start time
 *   events.jsonl    append-only journal (rollout started/retried/finished, step done, …)
 *   rollouts.jsonl  one line per FINISHED rollout: the source of truth for resume
 *   calls.jsonl     every model call of finished rollouts (CallRecord), written before their result
 * Crash safety: a rollout's calls are appended first, then its result line (fsync'ed). On resume,
 * a torn last line is ignored, calls of rollouts without a result are dropped, and finished
 * rollouts are skipped. So a killed run loses nothing finished and counts nothing twice.
 */
import { appendFileSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Plan } from "../../compiler/contract/plan.js";
import { ReinsError, type Problem } from "../../compiler/contract/problem.js";
import type { CallRecord } from "../records/call-record.js";

export type RolloutStatus = "ok" | "timeout" | "infra-failed" | "verifier-error" | "harness-error";

export interface RolloutResult {
  id: string;
  step: number;
  task: string;
  harness: string;
  pair: string;
  attempt: number;
  category: string;
  status: RolloutStatus;
  /** null when no trustworthy reward exists (infrastructure or verifier error). */
  reward: number | null;
  passed: boolean;
  /** Infrastructure tries used (1 = first try succeeded). */
  tries: number;
  durationMs: number;
  /** Phase timings of the final try, ms. */
  phases: Record<string, number>;
  calls: number;
  harnessExit: { code: number | null; signal: string | null; timedOut: boolean } | null;
  verifier: unknown;
  error?: { code: string; message: string };
  /** Infrastructure failures of earlier tries. */
  retries: { code: string; message: string }[];
  weightsVersion?: string;
  finishedAt: string;
}

export interface RunEvent {
  t: string;
  type: string;
  [k: string]: unknown;
}

export class RunStore {
  readonly dir: string;
  private fdResults: number | null = null;

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** A new run directory (created), or an existing one to resume. */
  static open(dir: string, plan: Plan, opts: { resume: boolean; manifest?: Record<string, unknown> }): { store?: RunStore; problem?: Problem } {
    const planFile = join(dir, "plan.json");
    if (opts.resume) {
      if (!existsSync(planFile)) return { problem: { code: "RunNotFound", message: `${dir} holds no run (no plan.json).`, hint: "Pass the --out directory of the run to resume." } };
      let old: Plan;
      try {
        old = JSON.parse(readFileSync(planFile, "utf8")) as Plan;
      } catch (err) {
        return { problem: { code: "RunCorrupt", message: `${planFile} cannot be read: ${(err as Error).message}.`, hint: "Start a new run with --out." } };
      }
      if (typeof old?.hash !== "string") return { problem: { code: "RunCorrupt", message: `${planFile} is not a reins plan (it has no hash).`, hint: "Start a new run with --out." } };
      if (old.hash !== plan.hash) {
        return { problem: { code: "PlanChanged", message: `The specs changed since the run started (plan ${old.hash.slice(7, 19)} → ${plan.hash.slice(7, 19)}).`, hint: "Resume with the same specs, or start a new run with --out." } };
      }
      const store = new RunStore(dir);
      store.compact();
      return { store };
    }
    if (existsSync(planFile)) return { problem: { code: "RunExists", message: `${dir} already holds a run.`, hint: `Resume it with --resume ${dir}, or choose another --out directory.` } };
    mkdirSync(dir, { recursive: true });
    writeAtomic(planFile, `${JSON.stringify(plan, null, 2)}\n`);
    writeAtomic(join(dir, "manifest.json"), `${JSON.stringify({ planHash: plan.hash, createdAt: new Date().toISOString(), ...(opts.manifest ?? {}) }, null, 2)}\n`);
    return { store: new RunStore(dir) };
  }

  /** Drop torn lines and calls that belong to no finished rollout (after a crash). */
  private compact(): void {
    const results = readJsonl<RolloutResult>(join(this.dir, "rollouts.jsonl"));
    const done = new Set(results.map((r) => r.id));
    const callsFile = join(this.dir, "calls.jsonl");
    const calls = readJsonl<CallRecord & { rolloutId?: string }>(callsFile).filter((c) => done.has(rolloutOfCall(c)));
    writeAtomic(join(this.dir, "rollouts.jsonl"), results.map((r) => `${JSON.stringify(r)}\n`).join(""));
    writeAtomic(callsFile, calls.map((c) => `${JSON.stringify(c)}\n`).join(""));
    this.event({ type: "resumed", finished: done.size });
  }

  results(): RolloutResult[] {
    return readJsonl<RolloutResult>(join(this.dir, "rollouts.jsonl"));
  }

  finishedIds(): Set<string> {
    return new Set(this.results().map((r) => r.id));
  }

  calls(): CallRecord[] {
    return readJsonl<CallRecord>(join(this.dir, "calls.jsonl"));
  }

  event(e: Omit<RunEvent, "t">): void {
    appendFileSync(join(this.dir, "events.jsonl"), `${JSON.stringify({ t: new Date().toISOString(), ...e })}\n`);
  }

  /** Record one finished rollout: its calls first, then its result (durable). */
  finish(result: RolloutResult, calls: readonly CallRecord[]): void {
    if (calls.length > 0) {
      // The proxy's rollout id is the try's id; the plan's rollout id ties calls to the result.
      appendFileSync(join(this.dir, "calls.jsonl"), calls.map((c) => `${JSON.stringify({ ...c, rolloutId: result.id })}\n`).join(""));
    }
    if (this.fdResults === null) this.fdResults = openSync(join(this.dir, "rollouts.jsonl"), "a");
    writeSync(this.fdResults, `${JSON.stringify(result)}\n`);
    fsyncSync(this.fdResults);
  }

  writeJson(name: string, value: unknown): void {
    writeAtomic(join(this.dir, name), `${JSON.stringify(value, null, 2)}\n`);
  }

  close(): void {
    if (this.fdResults !== null) closeSync(this.fdResults);
    this.fdResults = null;
  }
}

function rolloutOfCall(c: CallRecord & { rolloutId?: string }): string {
  return c.rolloutId ?? c.rollout;
}

/**
 * Parse JSON lines; a torn (unparseable) line is skipped. A line that parses but is not an object
 * was never written by reins: the file is damaged (RunCorrupt, naming the line).
 */
export function readJsonl<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  const out: T[] = [];
  const lines = readFileSync(file, "utf8").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue; // a line torn by a crash
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new ReinsError("RunCorrupt", `${file}, line ${i + 1}, is ${value === null ? "null" : Array.isArray(value) ? "a list" : `a ${typeof value}`}, not a record.`, "Remove the line (or restore the file), then resume; or start a new run with --out.");
    }
    out.push(value as T);
  }
  return out;
}

export function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  const fd = openSync(tmp, "r");
  fsyncSync(fd);
  closeSync(fd);
  renameSync(tmp, file);
}
