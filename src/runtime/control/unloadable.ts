/**
 * Published weights the engine could not load. The trainer's weights directories are
 * content-addressed and never rewritten once complete, so a damaged one would fail again on
 * resume; it is moved aside (kept for inspection) and a resumed run exports the weights anew.
 */
import { existsSync, renameSync } from "node:fs";
import { relative, resolve } from "node:path";

/** Move `dir` to `<dir>.unloadable-<n>` when it lies inside `runDir`; the new path, or null. */
export function setAsideUnloadable(dir: string, runDir: string): string | null {
  const abs = resolve(dir);
  const rel = relative(resolve(runDir), abs);
  if (!rel || rel.startsWith("..") || !existsSync(abs)) return null;
  let n = 1;
  while (existsSync(`${abs}.unloadable-${n}`)) n++;
  try {
    renameSync(abs, `${abs}.unloadable-${n}`);
    return `${abs}.unloadable-${n}`;
  } catch {
    return null;
  }
}
