/**
 * One run directory, read live for the viewer: streaming indexes over rollouts.jsonl,
 * calls.jsonl (heads only: rollout id, try, seq and the byte span), metrics.jsonl and the step
 * events of events.jsonl, refreshed from where they stopped on every request; small JSON files
 * (summary, manifest) re-read when they change; plan.json read once (it never changes). Every file
 * is opened through the run's RunRoot (./run-root.ts): a file it refuses (a link out of the run
 * directory, a FIFO or device, a file over its cap) is read as absent and listed in `notes()`.
 */
import { existsSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import type { ResolvedAlgorithm, ResolvedModel } from "../../compiler/contract/plan.js";
import { parseRolloutResult, type RolloutResult } from "../records/index.js";
import { LineIndex, type LineSpan, parseJsonLine } from "./line-index.js";
import { readCapped, RunRoot, VIEW_LIMITS, type RunFileRead, type RunFileRefusal } from "./run-root.js";

/** One rollout as the table shows it (the full record is re-read from its span on demand). */
export interface RolloutRow {
  id: string;
  step: number;
  task: string;
  harness: string;
  category: string;
  attempt: number;
  status: string;
  reward: number | null;
  passed: boolean;
  calls: number;
  durationMs: number;
  failure: string;
  weightsVersion: string;
  span: LineSpan;
}

/** Where one call record lives in calls.jsonl. */
export interface CallRef {
  rolloutId: string;
  try: number;
  seq: number;
  span: LineSpan;
}

export interface PlanFacts {
  name: string;
  kind: string;
  hash: string;
  algorithm: ResolvedAlgorithm | null;
  model: ResolvedModel | null;
  categories: Map<string, string>;
  heldOut: Set<string>;
  groupSize: number | null;
  /** A multi-seed run directory's seeds (each run in <dir>/seed-<s>); null for one run. */
  seeds: number[] | null;
}

const HEAD_BYTES = 1024;

/** Why a rollout did not pass, in a few words (empty when it passed). */
export function failureOf(r: RolloutResult): string {
  if (r.error) return r.error.code;
  if (r.status !== "ok") return r.status;
  if (r.harnessExit?.timedOut) return "harness timed out";
  if (r.passed) return "";
  const failing = failingChecks(r.verifier);
  if (failing.length > 0) return failing[0];
  return r.reward === null ? "no reward" : "not passed";
}

function failingChecks(verifier: unknown): string[] {
  const out: string[] = [];
  const parts = (verifier as { parts?: Record<string, { results?: { name?: unknown; pass?: unknown }[] }> } | null)?.parts;
  if (!parts || typeof parts !== "object") return out;
  for (const part of Object.values(parts)) {
    for (const check of Array.isArray(part?.results) ? part.results : []) {
      if (check && check.pass === false && typeof check.name === "string") out.push(check.name);
    }
  }
  return out;
}

function rowOf(bytes: Buffer, span: LineSpan): RolloutRow | undefined {
  const value = parseJsonLine(bytes);
  if (value === undefined) return undefined;
  let r: RolloutResult;
  try {
    r = parseRolloutResult(value);
  } catch {
    return undefined;
  }
  return {
    id: r.id,
    step: r.step,
    task: r.task,
    harness: r.harness,
    category: r.category,
    attempt: r.attempt,
    status: r.status,
    reward: r.reward,
    passed: r.passed,
    calls: r.calls,
    durationMs: r.durationMs,
    failure: failureOf(r),
    weightsVersion: r.weightsVersion ?? "",
    span,
  };
}

const ROLLOUT_ID = /"(rolloutId|rollout)":("(?:[^"\\]|\\.)*")/;

/** Read a call line's identity from its head (the writer puts v, rolloutId, try and seq first). */
function callRefOf(readLine: (span: LineSpan) => Buffer | null) {
  return (bytes: Buffer, span: LineSpan): CallRef | undefined => {
    const text = bytes.toString("utf8");
    const id = ROLLOUT_ID.exec(text);
    if (!id || !/"seq":\d+/.test(text)) {
      // Another writer's field order: read the whole line once.
      const whole = parseJsonLine(readLine(span));
      if (!whole || typeof whole !== "object") return undefined;
      const w = whole as Record<string, unknown>;
      const rid = typeof w.rolloutId === "string" ? w.rolloutId : typeof w.rollout === "string" ? w.rollout : undefined;
      if (rid === undefined || !Number.isInteger(w.seq)) return undefined;
      return { rolloutId: rid, try: Number.isInteger(w.try) ? (w.try as number) : 1, seq: w.seq as number, span };
    }
    let rolloutId: string;
    try {
      rolloutId = JSON.parse(id[2]) as string;
    } catch {
      return undefined;
    }
    // A v1 proxy record names its try-path id `rollout` and the run store tags `rolloutId`.
    if (id[1] === "rollout") {
      const tagged = /"rolloutId":("(?:[^"\\]|\\.)*")/.exec(text);
      if (tagged) rolloutId = JSON.parse(tagged[1]) as string;
    }
    const seq = Number(/"seq":(\d+)/.exec(text)![1]);
    const tryMatch = /"try":(\d+)/.exec(text);
    return { rolloutId, try: tryMatch ? Number(tryMatch[1]) : 1, seq, span };
  };
}

interface StepEvent {
  t: string;
  type: string;
  [key: string]: unknown;
}

export class RunData {
  readonly dir: string;
  /** The one way this run's files are opened. */
  readonly root: RunRoot;
  readonly name: string;
  readonly rollouts: LineIndex<RolloutRow>;
  readonly calls: LineIndex<CallRef>;
  readonly metrics: LineIndex<Record<string, unknown>>;
  readonly events: LineIndex<StepEvent>;
  private byId = new Map<string, RolloutRow>();
  private byIdVersion = -1;
  private callsById = new Map<string, CallRef[]>();
  private callsIndexed = 0;
  private callsVersion = -1;
  private jsonCache = new Map<string, { stamp: string; value: unknown }>();
  private planFacts: PlanFacts | undefined;
  /** Files read as absent because they were refused, by name (the JSON files; the streams keep their own). */
  private refused = new Map<string, RunFileRefusal>();

  constructor(dir: string) {
    this.root = new RunRoot(dir);
    this.dir = this.root.dir;
    this.name = basename(this.dir);
    this.rollouts = new LineIndex(this.root, "rollouts.jsonl", { onLine: rowOf });
    this.calls = new LineIndex(this.root, "calls.jsonl", { head: HEAD_BYTES, onLine: callRefOf((span) => this.calls.readLine(span)) });
    this.metrics = new LineIndex(this.root, "metrics.jsonl", {
      onLine: (bytes) => {
        const v = parseJsonLine(bytes);
        return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
      },
    });
    // Only the run's step-level events; rollout events are most of the file and the rollouts say more.
    this.events = new LineIndex(this.root, "events.jsonl", {
      head: 160,
      onLine: (bytes, span) => {
        const head = bytes.toString("utf8");
        if (/"type":"rollout-/.test(head)) return undefined;
        const v = parseJsonLine(bytes.length < span.length ? this.events.readLine(span) : bytes);
        return v && typeof v === "object" && typeof (v as StepEvent).type === "string" ? (v as StepEvent) : undefined;
      },
    });
  }

  /** True when the directory looks like a run directory (a plan, a manifest or rollouts). */
  static isRunDirectory(dir: string): boolean {
    try {
      if (!statSync(dir).isDirectory()) return false;
    } catch {
      return false;
    }
    return ["plan.json", "manifest.json", "rollouts.jsonl", "summary.json"].some((f) => existsSync(join(dir, f)));
  }

  rolloutRows(): RolloutRow[] {
    this.rollouts.refresh();
    return this.rollouts.entries;
  }

  rollout(id: string): RolloutRow | undefined {
    this.rollouts.refresh();
    if (this.byIdVersion !== this.rollouts.version) {
      if (this.rollouts.entries.length < this.byId.size) this.byId.clear();
      // Later lines win (a resumed run never repeats one, but a hand-made file might).
      for (const row of this.rollouts.entries) this.byId.set(row.id, row);
      this.byIdVersion = this.rollouts.version;
    }
    return this.byId.get(id);
  }

  /** The full record of a rollout, re-read from its line. */
  rolloutRecord(row: RolloutRow): RolloutResult | undefined {
    const v = parseJsonLine(this.rollouts.readLine(row.span));
    try {
      return parseRolloutResult(v);
    } catch {
      return undefined;
    }
  }

  /** The call references of one rollout, in file order. */
  callRefs(id: string): CallRef[] {
    this.calls.refresh();
    this.indexCalls();
    return this.callsById.get(id) ?? [];
  }

  /** Index about `maxBytes` more of calls.jsonl; true while more remains (the server's background warm-up). */
  indexCallsSome(maxBytes: number): boolean {
    this.calls.refresh(maxBytes);
    this.indexCalls();
    return this.calls.more;
  }

  private indexCalls(): void {
    if (this.callsVersion !== this.calls.version) {
      if (this.calls.entries.length < this.callsIndexed) {
        this.callsById.clear();
        this.callsIndexed = 0;
      }
      for (let i = this.callsIndexed; i < this.calls.entries.length; i++) {
        const ref = this.calls.entries[i];
        let list = this.callsById.get(ref.rolloutId);
        if (!list) this.callsById.set(ref.rolloutId, (list = []));
        list.push(ref);
      }
      this.callsIndexed = this.calls.entries.length;
      this.callsVersion = this.calls.version;
    }
  }

  metricRows(): Record<string, unknown>[] {
    this.metrics.refresh();
    return this.metrics.entries;
  }

  stepEvents(): StepEvent[] {
    this.events.refresh();
    return this.events.entries;
  }

  /** A small JSON file of the run (summary.json, manifest.json), re-read when it changed; null when absent, refused or not JSON. */
  json(name: "summary.json" | "manifest.json"): unknown {
    return this.readJson(name, VIEW_LIMITS.jsonBytes);
  }

  /** A JSON file of the run, parsed again only when its file changed. */
  private readJson(name: string, maxBytes: number): unknown {
    const read = this.root.withFile(name, maxBytes, (fd, stat) => {
      const stamp = `${stat.dev}:${stat.ino}:${stat.mtimeMs}:${stat.size}`;
      const cached = this.jsonCache.get(name);
      if (cached?.stamp === stamp) return cached.value;
      const value = parseJsonLine(readCapped(fd, maxBytes)) ?? null;
      this.jsonCache.set(name, { stamp, value });
      return value;
    });
    return this.noted(name, read) ?? null;
  }

  /** The files of the run the viewer did not read (or not all of), and why. */
  notes(): RunFileRefusal[] {
    const streams = [this.rollouts, this.calls, this.metrics, this.events].flatMap((s) => (s.refusal ? [s.refusal] : []));
    return [...this.refused.values(), ...streams].sort((a, b) => a.file.localeCompare(b.file));
  }

  /** A read's value (undefined when absent or refused), remembering a refusal until the file reads again. */
  private noted<T>(name: string, read: RunFileRead<T>): T | undefined {
    if (!read.ok && read.refusal) this.refused.set(name, read.refusal);
    else this.refused.delete(name);
    return read.ok ? read.value : undefined;
  }

  /** What the viewer needs from plan.json: read once. */
  plan(): PlanFacts {
    if (this.planFacts) return this.planFacts;
    const facts: PlanFacts = {
      name: this.name,
      kind: "",
      hash: "",
      algorithm: null,
      model: null,
      categories: new Map(),
      heldOut: new Set(),
      groupSize: null,
      seeds: null,
    };
    const read = this.readJson("plan.json", VIEW_LIMITS.planBytes);
    const plan = read && typeof read === "object" && !Array.isArray(read) ? (read as Record<string, unknown>) : null;
    if (plan) {
      if (typeof plan.name === "string") facts.name = plan.name;
      if (typeof plan.kind === "string") facts.kind = plan.kind;
      if (typeof plan.hash === "string") facts.hash = plan.hash;
      if (Array.isArray(plan.seeds) && plan.seeds.every((s) => Number.isInteger(s))) facts.seeds = plan.seeds as number[];
      facts.algorithm = (plan.algorithm as ResolvedAlgorithm) ?? null;
      facts.model = (plan.model as ResolvedModel) ?? null;
      for (const t of Array.isArray(plan.tasks) ? plan.tasks : []) {
        if (t && typeof t.name === "string") facts.categories.set(t.name, typeof t.category === "string" ? t.category : "");
      }
      for (const name of Array.isArray(plan.heldOutTasks) ? plan.heldOutTasks : []) if (typeof name === "string") facts.heldOut.add(name);
      const g = (plan.algorithm as { groupSize?: unknown } | undefined)?.groupSize ?? plan.attempts;
      if (typeof g === "number") facts.groupSize = g;
      this.planFacts = facts;
      this.jsonCache.delete("plan.json");
    }
    return facts;
  }
}
