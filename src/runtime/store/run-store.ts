/**
 * The run store: one directory per run.
 *   plan.json       the exact plan (written once; a resumed run must match its hash)
 *   manifest.json   versions, git commit, spec digests, start time
 *   events.jsonl    append-only journal (rollout started/retried/finished, step done, …)
 *   rollouts.jsonl  one RolloutResult line per FINISHED rollout: the source of truth for resume
 *   calls.jsonl     every model call of finished rollouts (CallRecord), written before their result
 *   harness-output/<try>.stdout, <try>.stderr
 *                   what the harness printed in each try of a rollout (<try> is the rollout id, then
 *                   `.t2`, `.t3`, … for retries), the last 256 KiB of each stream, secrets scrubbed;
 *                   written when the harness exits, whatever the outcome (also for a crashed try)
 *   trainer-logprobs/step-<n>.jsonl
 *                   the trainer's logprob of every token it trained in step n (one line per tree or
 *                   path: {rollout, leaf, logprobs}), written by the worker; the viewer's ratio overlay
 *   workspace-diff/<try>.json
 *                   the workspace before (the task's files) → after (what the verifier saw), per try
 * Both record files are written and read only through src/runtime/records (one writer, one reader).
 * Crash safety: a rollout's calls are appended first, then its result line (fsync'ed). On resume,
 * a torn last line is ignored, calls of rollouts without a result are dropped, and finished
 * rollouts are skipped. So a killed run loses nothing finished and counts nothing twice.
 * A full disk (ENOSPC, EDQUOT) is DiskFull (./disk-full.ts), never half a file: a JSON file is
 * written to a temporary file and renamed (removed when the write fails), an append is cut back to
 * where it began. After the first such failure the store records no more results (a finished
 * rollout would lack its harness output or diff): the run stops, and `--resume` after space is
 * made runs what did not finish.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Plan } from "../../compiler/contract/plan.js";
import { isReinsError, ReinsError, type Problem } from "../../compiler/contract/problem.js";
import type { EngineInfo } from "../engines/engine.js";
import { diskFullOr } from "./disk-full.js";
import { lockRun, type RunLock } from "./run-lock.js";
import {
  appendRecords,
  appendWhole,
  type CallRecord,
  formatRecordLine,
  formatRecordLines,
  parseCallRecords,
  parseRolloutResults,
  type RolloutResult,
} from "../records/index.js";

/** Where each try's harness output is kept, under the run directory. */
export const HARNESS_OUTPUT_DIR = "harness-output";
/** Where the trainer's per-token logprobs of one step are kept, under the run directory. */
export function trainerLogprobsFile(runDir: string, step: number): string {
  return join(runDir, "trainer-logprobs", `step-${step}.jsonl`);
}
/** The id of a rollout's try, which names its files here: the rollout id, then `.t2`, `.t3`, … */
export function tryIdOf(rolloutId: string, tries: number): string {
  return tries > 1 ? `${rolloutId}.t${tries}` : rolloutId;
}
/** Where each try's workspace diff is kept, under the run directory. */
export const WORKSPACE_DIFF_DIR = "workspace-diff";
/** The tail of each harness output stream that is kept. */
export const HARNESS_OUTPUT_BYTES = 256 * 1024;

export interface HarnessOutput {
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
}

export interface RunEvent {
  t: string;
  type: string;
  [k: string]: unknown;
}

export class RunStore {
  readonly dir: string;
  private fdResults: number | null = null;
  private readonly lock: RunLock;
  /** The first write that found the disk full: no result is recorded after it. */
  private full: ReinsError | undefined;

  private constructor(dir: string) {
    this.dir = dir;
    this.lock = lockRun(dir);
  }

  /** A new run directory (created), or an existing one to resume. */
  static open(dir: string, plan: Plan, opts: { resume: boolean; manifest?: Record<string, unknown> }): { store?: RunStore; problem?: Problem } {
    const planFile = join(dir, "plan.json");
    if (opts.resume) {
      if (!existsSync(planFile))
        return { problem: { code: "RunNotFound", message: `${dir} holds no run (no plan.json).`, hint: "Pass the --out directory of the run to resume." } };
      let old: Plan;
      try {
        old = JSON.parse(readFileSync(planFile, "utf8")) as Plan;
      } catch (err) {
        return { problem: { code: "RunCorrupt", message: `${planFile} cannot be read: ${(err as Error).message}.`, hint: "Start a new run with --out." } };
      }
      if (typeof old?.hash !== "string")
        return { problem: { code: "RunCorrupt", message: `${planFile} is not a reins plan (it has no hash).`, hint: "Start a new run with --out." } };
      if (old.hash !== plan.hash) {
        return {
          problem: {
            code: "PlanChanged",
            message: `The specs changed since the run started (plan ${old.hash.slice(7, 19)} → ${plan.hash.slice(7, 19)}).`,
            hint: "Resume with the same specs, or start a new run with --out.",
          },
        };
      }
      const store = new RunStore(dir);
      try {
        store.compact();
      } catch (err) {
        store.close();
        throw err;
      }
      return { store };
    }
    if (existsSync(planFile))
      return {
        problem: { code: "RunExists", message: `${dir} already holds a run.`, hint: `Resume it with --resume ${dir}, or choose another --out directory.` },
      };
    try {
      mkdirSync(dir, { recursive: true });
    } catch (err) {
      throw diskFullOr(err, dir, dir);
    }
    writeAtomic(planFile, `${JSON.stringify(plan, null, 2)}\n`, dir);
    writeAtomic(
      join(dir, "manifest.json"),
      `${JSON.stringify({ planHash: plan.hash, createdAt: new Date().toISOString(), ...(opts.manifest ?? {}) }, null, 2)}\n`,
      dir,
    );
    return { store: new RunStore(dir) };
  }

  /**
   * Drop the torn last lines and the calls that belong to no finished rollout (after a crash).
   * Any other line the readers refuse was not torn by a crash: the file is damaged, and the run
   * stops with RunCorrupt naming the line instead of silently deleting it.
   */
  private compact(): void {
    const results = this.readResults();
    const calls = this.readCalls();
    const damaged = [...results.diagnostics, ...calls.diagnostics].find((d) => d.severity === "error");
    if (damaged) {
      throw new ReinsError(
        "RunCorrupt",
        `${damaged.file}, line ${damaged.line}: ${damaged.message}.`,
        "Remove the line (or restore the file), then resume; or start a new run with --out.",
      );
    }
    const done = new Set(results.value.map((r) => r.id));
    const kept = calls.value.filter((c) => done.has(c.rolloutId));
    writeAtomic(join(this.dir, "rollouts.jsonl"), formatRecordLines(results.value), this.dir);
    writeAtomic(join(this.dir, "calls.jsonl"), formatRecordLines(kept), this.dir);
    this.event({ type: "resumed", finished: done.size });
  }

  results(): RolloutResult[] {
    return this.readResults().value;
  }

  finishedIds(): Set<string> {
    return new Set(this.results().map((r) => r.id));
  }

  calls(): CallRecord[] {
    return this.readCalls().value;
  }

  private readResults() {
    const file = join(this.dir, "rollouts.jsonl");
    return parseRolloutResults(readIfPresent(file), file, { tornTail: true });
  }

  private readCalls() {
    const file = join(this.dir, "calls.jsonl");
    return parseCallRecords(readIfPresent(file), file, { tornTail: true });
  }

  event(e: Omit<RunEvent, "t">): void {
    const file = join(this.dir, "events.jsonl");
    this.writing(file, () => appendWhole(file, `${JSON.stringify({ t: new Date().toISOString(), ...e })}\n`));
  }

  /**
   * Record one finished rollout: its calls first, then its result (durable). Refused with DiskFull
   * once a write of this store found the disk full (see the header).
   */
  finish(result: RolloutResult, calls: readonly CallRecord[]): void {
    const stray = calls.find((c) => c.rolloutId !== result.id);
    if (stray) throw new Error(`bug: a call of rollout ${stray.rolloutId} was stored with rollout ${result.id}`);
    if (this.full) throw new ReinsError("DiskFull", `Rollout ${result.id} is not recorded: ${this.full.message}`, this.full.hint, { cause: this.full });
    const callsFile = join(this.dir, "calls.jsonl");
    this.writing(callsFile, () => appendRecords(callsFile, calls));
    const resultsFile = join(this.dir, "rollouts.jsonl");
    this.writing(resultsFile, () => {
      if (this.fdResults === null) this.fdResults = openSync(resultsFile, "a");
      appendWhole(this.fdResults, formatRecordLine(result));
      fsyncSync(this.fdResults);
    });
  }

  /** Run one write of `file`; a full disk becomes DiskFull (and is remembered: see finish). */
  private writing(file: string, write: () => void): void {
    try {
      write();
    } catch (err) {
      const mapped = diskFullOr(err, file, this.dir);
      if (isReinsError(mapped) && mapped.code === "DiskFull") this.full ??= mapped;
      throw mapped;
    }
  }

  /** What the harness of one try printed (see the layout above); a later write for the same try replaces it. */
  writeHarnessOutput(tryId: string, output: HarnessOutput): void {
    checkTryId(tryId);
    const dir = join(this.dir, HARNESS_OUTPUT_DIR);
    this.writing(dir, () => mkdirSync(dir, { recursive: true }));
    for (const stream of ["stdout", "stderr"] as const) {
      const dropped = output[`${stream}Truncated`] ? `[reins: earlier output dropped; the last ${HARNESS_OUTPUT_BYTES / 1024} KiB follow]\n` : "";
      const file = join(dir, `${tryId}.${stream}`);
      this.writing(file, () => writeAtomic(file, dropped + output[stream], this.dir));
    }
  }

  /** The workspace diff of one try (see the layout above); a later write for the same try replaces it. */
  writeWorkspaceDiff(tryId: string, diff: unknown): void {
    checkTryId(tryId);
    const dir = join(this.dir, WORKSPACE_DIFF_DIR);
    this.writing(dir, () => mkdirSync(dir, { recursive: true }));
    const file = join(dir, `${tryId}.json`);
    this.writing(file, () => writeAtomic(file, `${JSON.stringify(diff)}\n`, this.dir));
  }

  /** Add what the engine's probe found to manifest.json (`engine`), replacing an earlier one. */
  recordEngine(info: EngineInfo): void {
    const file = join(this.dir, "manifest.json");
    const manifest = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>) : {};
    this.writing(file, () => writeAtomic(file, `${JSON.stringify({ ...manifest, engine: info }, null, 2)}\n`, this.dir));
  }

  writeJson(name: string, value: unknown): void {
    const file = join(this.dir, name);
    this.writing(file, () => writeAtomic(file, `${JSON.stringify(value, null, 2)}\n`, this.dir));
  }

  /** Closes the results file and releases the run directory's lock. */
  close(): void {
    if (this.fdResults !== null) closeSync(this.fdResults);
    this.fdResults = null;
    this.lock.release();
  }
}

/** A try id names files in the run directory: never a path. */
function checkTryId(tryId: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(tryId)) throw new Error(`bug: unsafe try id ${JSON.stringify(tryId)}`);
}

function readIfPresent(file: string): string {
  return existsSync(file) ? readFileSync(file, "utf8") : "";
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
      throw new ReinsError(
        "RunCorrupt",
        `${file}, line ${i + 1}, is ${value === null ? "null" : Array.isArray(value) ? "a list" : `a ${typeof value}`}, not a record.`,
        "Remove the line (or restore the file), then resume; or start a new run with --out.",
      );
    }
    out.push(value as T);
  }
  return out;
}

/**
 * Write `file` whole or not at all: into a temporary file beside it, synced, then renamed over it.
 * When that fails the temporary file is removed and `file` is as it was; a full disk is DiskFull
 * (naming `runDir`, the run directory the file belongs to: by default the file's directory).
 */
export function writeAtomic(file: string, text: string, runDir?: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, text);
    const fd = openSync(tmp, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw diskFullOr(err, file, runDir);
  }
}
