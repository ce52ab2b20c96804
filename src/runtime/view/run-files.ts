/**
 * The per-try and per-step files of a run directory the viewer reads besides its indexes:
 * harness output and workspace diffs (one file per try, named by the try id) and the trainer's
 * per-token logprobs (one file per step). A name is checked (no `/`, no `..`), and the file is
 * opened through the run's RunRoot, so no id, link or linked folder reaches outside the run
 * directory, and no FIFO or device is read.
 */
import { basename, dirname } from "node:path";
import { trainerLogprobsFile, tryIdOf } from "../store/run-store.js";
import { VIEW_LIMITS, type RunFileRead, type RunRoot } from "./run-root.js";

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]*$/;
const LOGPROBS_DIR = basename(dirname(trainerLogprobsFile(".", 0)));

/** The file a rollout's last try wrote in `folder` (`<id>[.t<n>]<suffix>`). */
export function tryFileName(id: string, tries: number, suffix: string): string {
  return `${tryIdOf(id, tries)}${suffix}`;
}

/** The last `maxBytes` of `folder/name` of the run; absent when the name is not a plain file name. */
export function readRunFile(root: RunRoot, folder: string, name: string, maxBytes: number): RunFileRead<string> {
  if (!SAFE_NAME.test(name) || name.includes("..")) return { ok: false, refusal: null };
  return root.readTail(`${folder}/${name}`, maxBytes);
}

/** The whole of `folder/name` of the run, refused when it is over `maxBytes`. */
export function readWholeRunFile(root: RunRoot, folder: string, name: string, maxBytes: number): RunFileRead<string> {
  if (!SAFE_NAME.test(name) || name.includes("..")) return { ok: false, refusal: null };
  return root.readText(`${folder}/${name}`, maxBytes);
}

interface StepLogprobs {
  stamp: string;
  /** Per rollout: its rows' logprobs, trees first, then paths by leaf. */
  byRollout: Map<string, { leaf: number; logprobs: number[] }[]>;
}

/** The trainer's logprobs of each step's trained tokens, re-read when the step's files change. */
export class TrainerLogprobs {
  private cache = new Map<number, StepLogprobs>();

  constructor(private readonly root: RunRoot) {}

  /**
   * The trainer's logprob of each token it trained of `rollout` in `step`, in the packed tree's
   * order (depth-first; a per-path batch's paths by leaf give the same order); null when the
   * step recorded none for it.
   */
  of(step: number, rollout: string): number[] | null {
    const names = this.names(step);
    if (names.length === 0) return null;
    const stamp = names.map((n) => this.stampOf(n)).join("|");
    let cached = this.cache.get(step);
    if (!cached || cached.stamp !== stamp) {
      cached = { stamp, byRollout: this.read(names) };
      this.cache.set(step, cached);
      while (this.cache.size > 4) this.cache.delete(this.cache.keys().next().value as number);
    }
    const rows = cached.byRollout.get(rollout);
    if (!rows) return null;
    return [...rows].sort((a, b) => a.leaf - b.leaf).flatMap((r) => r.logprobs);
  }

  /** The step's file, or one per rank (`.rank<k>`) from a distributed trainer. */
  private names(step: number): string[] {
    const base = basename(trainerLogprobsFile(".", step));
    return this.root
      .list(LOGPROBS_DIR)
      .filter((n) => (n === base || n.startsWith(`${base}.rank`)) && SAFE_NAME.test(n))
      .sort();
  }

  private stampOf(name: string): string {
    const read = this.root.withFile(`${LOGPROBS_DIR}/${name}`, undefined, (_fd, s) => `${s.dev}:${s.ino}:${s.mtimeMs}:${s.size}`);
    return read.ok ? read.value : "gone";
  }

  private read(names: readonly string[]): StepLogprobs["byRollout"] {
    const out: StepLogprobs["byRollout"] = new Map();
    for (const name of names) {
      const read = readRunFile(this.root, LOGPROBS_DIR, name, VIEW_LIMITS.logprobsTailBytes);
      if (read.ok) addRows(out, read.value);
    }
    return out;
  }
}

function addRows(out: StepLogprobs["byRollout"], text: string): void {
  for (const line of text.split("\n")) {
    let v: { rollout?: unknown; leaf?: unknown; logprobs?: unknown };
    try {
      v = JSON.parse(line) as typeof v;
    } catch {
      continue;
    }
    if (typeof v?.rollout !== "string" || !Array.isArray(v.logprobs) || !v.logprobs.every((x) => typeof x === "number")) continue;
    let rows = out.get(v.rollout);
    if (!rows) out.set(v.rollout, (rows = []));
    rows.push({ leaf: typeof v.leaf === "number" ? v.leaf : -1, logprobs: v.logprobs as number[] });
  }
}
