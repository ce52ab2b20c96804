/**
 * Host paths named by Harness and Model specs, checked against the spec file's project: harness
 * `mounts` (shown read-only in every sandbox) and a model's `chatTemplateFile` (read into the
 * plan; a Model's other files are checked in ./defaults.ts and ./hf-directory.ts). reins mounts
 * its own install cache, node and agent by itself, never through `mounts`, so nothing outside the
 * project needs to be named here.
 */
import { lstatSync } from "node:fs";
import { dirname } from "node:path";
import type { Code } from "../contract/codes.js";
import type { HarnessSpec } from "../schema/harness.js";
import { MODEL_FILE_OUTSIDE_HINT, MODEL_FILE_TOO_LARGE_HINT, readModelFile } from "../source/model-files.js";
import { describeType, locateInProject, ownDirectoryRoots, type ProjectRoot } from "../source/project.js";

export interface HostPathProblem {
  path: (string | number)[];
  code: Code;
  message: string;
  /** What to do, where the catalogue's hint for the code is too general. */
  hint?: string;
}

/** Each mount must exist inside the project (symlinks resolved) and be a directory or a regular file. */
export function mountProblems(spec: HarnessSpec, specFile: string, roots: readonly ProjectRoot[] = ownDirectoryRoots(specFile)): HostPathProblem[] {
  const out: HostPathProblem[] = [];
  (spec.mounts ?? []).forEach((m, i) => {
    const at = ["mounts", i, "path"];
    const loc = locateInProject(roots, dirname(specFile), m.path);
    if (!loc.ok) {
      out.push({
        path: at,
        code: loc.code,
        message: loc.code === "FileNotFound" ? `Mount ${m.path} does not exist.` : `Mount ${m.path} is refused: ${loc.why}.`,
      });
      return;
    }
    const st = lstatSync(loc.real, { throwIfNoEntry: false });
    if (st && !st.isDirectory() && !st.isFile())
      out.push({ path: at, code: "NotRegularFile", message: `Mount ${m.path} is refused: it is ${describeType(st)}.` });
  });
  return out;
}

/** The text of a chat template file inside the project (`roots`: the Model file's, ../source/model-files.ts), at most 1 MiB. */
export function readChatTemplate(
  file: string,
  specFile: string,
  roots: readonly ProjectRoot[] = ownDirectoryRoots(specFile),
): { ok: true; text: string } | { ok: false; problem: HostPathProblem } {
  const read = readModelFile(file, dirname(specFile), "template", roots);
  if (!read.ok) {
    const hint = read.code === "FileTooLarge" ? MODEL_FILE_TOO_LARGE_HINT : read.code === "OutsideProject" ? MODEL_FILE_OUTSIDE_HINT : undefined;
    return { ok: false, problem: { path: ["chatTemplateFile"], code: read.code, message: `Cannot read ${file}: ${read.why}.`, ...(hint ? { hint } : {}) } };
  }
  return { ok: true, text: read.text };
}
