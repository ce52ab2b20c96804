/**
 * The per-try and per-step files of a run directory the viewer reads besides its indexes:
 * harness output and workspace diffs (one file per try, named by the try id) and the trainer's
 * per-token logprobs (one file per step). A name is checked and its real path must sit directly
 * in its folder, so no id, link or `..` reaches outside the run directory.
 */
import { closeSync, fstatSync, openSync, readdirSync, readSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { trainerLogprobsFile, tryIdOf } from "../store/run-store.js";

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]*$/;
const LOGPROBS_DIR = basename(dirname(trainerLogprobsFile(".", 0)));
/** Most of one step's logprobs file that is read (a file past it is read from its end, torn lines skipped). */
const LOGPROBS_BYTES = 256 * 1024 * 1024;

/** The file a rollout's last try wrote in `folder` (`<id>[.t<n>]<suffix>`). */
export function tryFileName(id: string, tries: number, suffix: string): string {
  return `${tryIdOf(id, tries)}${suffix}`;
}

/** The last `maxBytes` of `folder/name` under the run directory; null when absent or unsafe. */
export function readRunFile(runDir: string, folder: string, name: string, maxBytes: number): string | null {
  if (!SAFE_NAME.test(name) || name.includes("..")) return null;
  const dir = join(runDir, folder);
  const file = join(dir, name);
  let fd: number;
  try {
    if (dirname(realpathSync(file)) !== realpathSync(dir)) return null;
    fd = openSync(file, "r");
  } catch {
    return null;
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return buffer.toString("utf8");
  } finally {
    closeSync(fd);
  }
}

interface StepLogprobs {
  stamp: string;
  /** Per rollout: its rows' logprobs, trees first, then paths by leaf. */
  byRollout: Map<string, { leaf: number; logprobs: number[] }[]>;
}

/** The trainer's logprobs of each step's trained tokens, re-read when the step's files change. */
export class TrainerLogprobs {
  private cache = new Map<number, StepLogprobs>();

  constructor(private readonly runDir: string) {}

  /**
   * The trainer's logprob of each token it trained of `rollout` in `step`, in the packed tree's
   * order (depth-first; a per-path batch's paths by leaf give the same order); null when the
   * step recorded none for it.
   */
  of(step: number, rollout: string): number[] | null {
    const names = this.names(step);
    if (names.length === 0) return null;
    const stamp = names.map((n) => stampOf(join(this.runDir, LOGPROBS_DIR, n))).join("|");
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
    const base = basename(trainerLogprobsFile(this.runDir, step));
    try {
      return readdirSync(join(this.runDir, LOGPROBS_DIR)).filter((n) => n === base || n.startsWith(`${base}.rank`)).sort();
    } catch {
      return [];
    }
  }

  private read(names: readonly string[]): StepLogprobs["byRollout"] {
    const out: StepLogprobs["byRollout"] = new Map();
    for (const name of names) addRows(out, readRunFile(this.runDir, LOGPROBS_DIR, name, LOGPROBS_BYTES) ?? "");
    return out;
  }
}

function stampOf(file: string): string {
  try {
    const s = statSync(file);
    return `${s.mtimeMs}:${s.size}`;
  } catch {
    return "gone";
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
