/**
 * What a resumed `reins run` reads back from its run directory's own files, checked before
 * anything runs. A run directory is data (copied, shared, edited by hand), so the paths its
 * events.jsonl names are confined: the checkpoint the worker restores (and SFT's, the KL term's
 * reference) must resolve, symlinks followed, inside the run directory or the Trainer's
 * checkpointDir for this run (local-trainer.ts), and the weights directory that served inside the
 * run directory; otherwise OutsideRunDirectory. A path with `.` or `..` segments, or a relative one,
 * is refused as well: the worker opens exactly the path that was checked. A checkpoint a worker
 * in a cluster's pod wrote is a path in the claim, checked by its words against the run's
 * checkpoint directory there. A checkpoint an older reins wrote (trainer.pt, a torch pickle, which
 * runs code when loaded) is refused with CheckpointFormatOutdated; the worker refuses it too
 * (trainers/torch/checkpoint_io.py).
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, posix, relative, sep } from "node:path";
import { LoopError } from "./loop-error.js";
import type { LoopState } from "./state.js";

/** Where this run's checkpoints may be. */
export interface CheckpointPlaces {
  /** The run directory. */
  runDir: string;
  /** The Trainer's checkpoint directory for this run: on this machine, or (remote) in the trainer's claim. */
  checkpointRoot: string;
  /** The worker runs in a cluster's pod: checkpoint paths are paths there. */
  remote?: boolean;
}

/** The files a checkpoint directory of this reins holds (trainers/torch/checkpoint_io.py). */
const SUMMARY = "checkpoint.json";
const LEGACY = "trainer.pt";

/**
 * Refuse a resume whose recorded checkpoint or weights paths leave the run (OutsideRunDirectory),
 * or whose checkpoint is an older reins's pickle (CheckpointFormatOutdated). Nothing is read but
 * the directories' names and the checkpoint's checkpoint.json.
 */
export function checkResumePaths(state: Pick<LoopState, "lastCheckpoint" | "sftCheckpoint">, o: CheckpointPlaces): void {
  const runDir = realDir(o.runDir);
  const checkpointRoots = o.remote ? [] : [runDir, realDir(o.checkpointRoot)];
  for (const c of [state.lastCheckpoint, state.sftCheckpoint]) {
    if (!c) continue;
    const what = c.phase === "sft" ? "SFT's checkpoint" : `the checkpoint of step ${c.step}`;
    if (o.remote) requireRemoteInside(c.path, o.checkpointRoot, what);
    else {
      requireInside(c.path, checkpointRoots, what, o);
      refuseLegacy(c.path, what);
    }
    // Only the last checkpoint's weights serve again (policy-engine.ts loads them).
    if (c === state.lastCheckpoint) requireInside(c.weightsDir, [runDir], `the weights of ${what}`, o, "weightsDir");
  }
}

/** The real path of `dir` (itself when it does not exist yet: nothing can be inside it then). */
function realDir(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return dir;
  }
}

/** The real path of `p`: its deepest existing ancestor's real path, then the rest of `p` as written. */
function realPath(p: string): string {
  const rest: string[] = [];
  let head = p;
  for (;;) {
    try {
      return join(realpathSync(head), ...rest.reverse());
    } catch {
      const parent = dirname(head);
      if (parent === head) return p;
      rest.push(basename(head));
      head = parent;
    }
  }
}

function isUnder(p: string, root: string): boolean {
  const r = relative(root, p);
  return r === "" || (!r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute(r));
}

function outside(what: string, shown: string, where: string, o: CheckpointPlaces, field: string): LoopError {
  // The Trainer's checkpointDir, named when it is not the run directory's own checkpoints/.
  const elsewhere = !o.remote && !isUnder(realDir(o.checkpointRoot), realDir(o.runDir));
  return new LoopError(
    "OutsideRunDirectory",
    `${join(o.runDir, "events.jsonl")} names ${what} as ${shown} (its ${field}), ${where}; a resumed run reads its checkpoints and weights only inside its run directory${elsewhere ? ` or its checkpoint directory ${o.checkpointRoot}` : ""}. Nothing was loaded.`,
    "The run's events.jsonl was edited, or the directory was copied from elsewhere (its recorded paths are absolute). Restore the run's own events.jsonl, or start a new run with --out.",
  );
}

function requireInside(p: unknown, roots: string[], what: string, o: CheckpointPlaces, field = "path"): void {
  if (typeof p !== "string" || p.length === 0) throw outside(what, JSON.stringify(p) ?? "nothing", "which is not a path", o, field);
  const shown = JSON.stringify(p);
  if (!isAbsolute(p) || p.split("/").some((s) => s === "." || s === ".."))
    throw outside(what, shown, "which is not an absolute path without . or .. segments", o, field);
  const real = realPath(p);
  if (!roots.some((root) => isUnder(real, root)))
    throw outside(what, shown, real === p ? "outside the run" : `which resolves to ${real}, outside the run`, o, field);
}

function requireRemoteInside(p: unknown, root: string, what: string): void {
  const ok =
    typeof p === "string" &&
    posix.isAbsolute(p) &&
    !p.split("/").some((s) => s === "." || s === "..") &&
    p.startsWith(`${posix.normalize(root).replace(/\/$/, "")}/`);
  if (!ok) {
    throw new LoopError(
      "OutsideRunDirectory",
      `events.jsonl names ${what} as ${JSON.stringify(p) ?? "nothing"}, outside the run's checkpoint directory ${root} in the trainer's claim. Nothing was loaded.`,
      "The run's events.jsonl was edited, or the directory was copied from elsewhere. Restore the run's own events.jsonl, or start a new run with --out.",
    );
  }
}

/** A checkpoint of an older reins: trainer.pt (a torch pickle) and no checkpoint.json of format 2. */
function refuseLegacy(p: string, what: string): void {
  if (!existsSync(join(p, LEGACY))) return;
  try {
    const summary = JSON.parse(readFileSync(join(p, SUMMARY), "utf8")) as { format?: unknown } | null;
    if (summary?.format === 2) return;
  } catch {
    // no summary, or not JSON: an older checkpoint (or a damaged one): refused either way
  }
  throw new LoopError(
    "CheckpointFormatOutdated",
    `${what} (${p}) was written by an older reins in pickle format (${LEGACY}); reins no longer loads pickles, which run code when they are loaded. Nothing was loaded.`,
    "Start a new run: reins run SPECS --out NEW_DIR. (Checkpoints are now safetensors and JSON.)",
  );
}
