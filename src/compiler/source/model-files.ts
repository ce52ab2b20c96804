/**
 * The files reins reads on behalf of a Model are confined like spec files. They are a tokenizer.json
 * (`tokenizer: {type: file}`, with the tokenizer_config.json beside it), the files of a Hugging Face
 * directory (`tokenizer: {type: huggingface}`: tokenizer.json, tokenizer_config.json,
 * generation_config.json, special_tokens_map.json, chat_template.jinja,
 * additional_chat_templates/*.jinja) and a `chatTemplateFile`.
 * - At compile time each lies inside the Model file's project once symlinks are resolved (reins's
 *   own examples may also name the policies reins makes for them under its own `.reins/`), is a
 *   regular file outside /proc, /sys and /dev, and is no larger than its cap; what is read is
 *   opened non-blocking and read up to the cap. A file that does not exist yet is the runtime's
 *   to report (reins creates some policies on the first run).
 * - At run time (the proxy, the engines and `reins view` load the tokenizer again from the plan's
 *   paths; the onnx engine reads its model directory's READY and config.json) `readModelFile` and
 *   `checkModelFile` without roots check again all that can be checked without the project: a
 *   regular file outside /proc, /sys and /dev, within its cap, so a link swapped in after `plan`
 *   still cannot feed the environment or a device to the tokenizer or the engine.
 * One function for both, exported by the compiler's front door.
 */
import { lstatSync, realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describeType, isWithin, locateInProject, projectRootAt, readRegularFile, type Located, type ProjectRoot, type Refusal } from "./project.js";

const MiB = 1024 * 1024;

/** Caps on the files of a Model, by kind. */
export const MODEL_FILE_LIMITS = {
  /** tokenizer.json (the largest real ones are 30-40 MiB). */
  tokenizer: 64 * MiB,
  /** tokenizer_config.json, generation_config.json, special_tokens_map.json. */
  config: 16 * MiB,
  /** chat_template.jinja, additional_chat_templates/NAME.jinja, a chatTemplateFile (real ones are tens of KiB). */
  template: 1 * MiB,
  /** model.onnx and other weights: no cap (the engine reads them itself), but regular files all the same. */
  weights: Number.POSITIVE_INFINITY,
} as const;

export type ModelFileKind = keyof typeof MODEL_FILE_LIMITS;

/** Most entries listed from a directory's additional_chat_templates/. */
export const MAX_TEMPLATE_DIR_ENTRIES = 1_000;

/** What to do when a Model's file is too large (the catalogue's hint is about spec files). */
export const MODEL_FILE_TOO_LARGE_HINT =
  "Model files are capped: tokenizer.json 64 MiB; tokenizer_config.json, generation_config.json and special_tokens_map.json 16 MiB each; a chat template 1 MiB. Name the model's own files, not something else.";

/** What to do when a Model's file lies outside the project. */
export const MODEL_FILE_OUTSIDE_HINT =
  "A Model's files are read only from its project, like every file a spec names: keep the tokenizer (or the model directory) inside the project, or give --project-root DIR that holds it; symlinks that lead out of the project are refused.";

/** The whole host, for checks at run time: nothing is outside it, but the kernel's trees are still refused. */
const HOST: ProjectRoot = { dir: "/", real: "/" };

const INSTALL_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const OWN_EXAMPLES = join(INSTALL_DIR, "examples");
const OWN_STATE = join(INSTALL_DIR, ".reins");

/**
 * Where a Model file named in `specFile` may lie: its project, and for reins's own examples also
 * reins's own `.reins/` directory (which may not exist yet), where reins creates their policies.
 */
export function modelFileRoots(specFile: string, roots: readonly ProjectRoot[]): ProjectRoot[] {
  const examples = projectRootAt(OWN_EXAMPLES);
  if (!examples.ok) return [...roots];
  let real = specFile;
  try {
    real = realpathSync.native(specFile);
  } catch {
    // a spec file that was read exists; keep the path as given otherwise
  }
  if (!isWithin(examples.root.real, real)) return [...roots];
  let stateReal: string;
  try {
    stateReal = realpathSync.native(OWN_STATE);
  } catch {
    stateReal = join(realpathSync.native(INSTALL_DIR), ".reins");
  }
  return [...roots, { dir: OWN_STATE, real: stateReal }];
}

/**
 * Where a Model's file `p` (relative to `base`) lies: inside `roots` once symlinks are resolved,
 * or, without roots (run time), anywhere but under /proc, /sys and /dev.
 */
export function locateModelFile(p: string, base: string, roots?: readonly ProjectRoot[]): Located {
  return locateInProject(roots ?? [HOST], base, p);
}

/** A Model's file located (see locateModelFile), a regular file within the cap of its kind; nothing is opened. */
export function checkModelFile(p: string, base: string, kind: ModelFileKind, roots?: readonly ProjectRoot[]): Located | Refusal {
  const loc = locateModelFile(p, base, roots);
  if (!loc.ok) return loc;
  const st = lstatSync(loc.real, { throwIfNoEntry: false });
  if (!st) return { ok: false, code: "FileNotFound", why: "it does not exist" };
  if (!st.isFile()) return { ok: false, code: "NotRegularFile", why: `it is ${describeType(st)}` };
  const limit = MODEL_FILE_LIMITS[kind];
  if (st.size > limit)
    return { ok: false, code: "FileTooLarge", why: `it is ${st.size} bytes; the limit for a ${kindName(kind)} is ${limit} bytes (${limit / MiB} MiB)` };
  return loc;
}

/**
 * The text of a Model's file `p` (relative to `base`): located (see locateModelFile), a regular
 * file, opened non-blocking and read up to the cap of its kind. The compiler passes the Model
 * file's roots; the runtime passes none.
 */
export function readModelFile(
  p: string,
  base: string,
  kind: ModelFileKind,
  roots?: readonly ProjectRoot[],
): { ok: true; text: string; path: string; real: string } | Refusal {
  const loc = locateModelFile(p, base, roots);
  if (!loc.ok) return loc;
  const limit = MODEL_FILE_LIMITS[kind];
  const read = readRegularFile(loc.real, limit);
  if (!read.ok) {
    return read.code === "FileTooLarge" ? { ok: false, code: "FileTooLarge", why: `${read.why} (${limit / MiB} MiB for a ${kindName(kind)})` } : read;
  }
  return { ok: true, text: read.bytes.toString("utf8"), path: loc.path, real: loc.real };
}

function kindName(kind: ModelFileKind): string {
  return kind === "tokenizer" ? "tokenizer.json" : kind === "config" ? "model or tokenizer config" : kind === "template" ? "chat template" : "weights file";
}
