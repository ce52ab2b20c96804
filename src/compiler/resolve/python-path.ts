/**
 * The `python` a spec names (a Trainer's, inline or a document; a vLLM engine's `serve.python`).
 * reins runs it as the invoking user, so a spec, possibly someone else's, may name only:
 * - an interpreter inside its project (e.g. `.venv/bin/python`; relative to the spec file);
 * - one in a Python environment reins installs: the scale venv (scripts/install-python.sh:
 *   $REINS_SCALE_PYTHON_DIR, else ~/.cache/reins/scale-python) or the metrics venv
 *   (scripts/install-metrics-python.sh: $REINS_METRICS_PYTHON_DIR, else
 *   ~/.cache/reins/metrics-python), and $REINS_METRICS_PYTHON;
 * - one listed in $REINS_ALLOWED_PYTHON: ':'-separated absolute paths, each an interpreter or a
 *   directory whose interpreters are allowed (the machine owner's allow-list, never the spec's).
 * A venv's `bin/python` is a symlink to a system Python, so the interpreter's own link is not
 * followed: the check is on the path written, `..` normalized, with the directories above it
 * resolved as the kernel would (a `link/..` or a symlinked directory leading out is refused).
 * The plan carries the path made absolute against the spec file, as written otherwise. Pure but for
 * `realpath` of directories (nothing is opened or run).
 */
import { realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { isWithin, ownDirectoryRoots, type ProjectRoot } from "../source/project.js";
import { CODES } from "../contract/codes.js";
import { makeDiagnostic, type Diagnostic } from "../contract/diagnostics.js";
import type { TypedDocument } from "../schema/validate.js";
import { positionAt } from "../source/yaml.js";

export type PythonEnv = Readonly<Record<string, string | undefined>>;

interface Place {
  /** As given, normalized. */
  dir: string;
  /** Symlinks resolved (the same when it does not exist). */
  real: string;
  /** A directory (anything inside is allowed) or one interpreter. */
  kind: "dir" | "file";
}

function realOr(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
}

/** `p` with its directories resolved as the kernel would; its last component kept as written. */
function physical(p: string): string {
  const cut = p.lastIndexOf("/");
  const dir = cut <= 0 ? "/" : p.slice(0, cut);
  try {
    return join(realpathSync.native(dir), p.slice(cut + 1));
  } catch {
    // A directory that does not exist leads nowhere yet: judge the path as written.
    return resolve(p);
  }
}

/** The directories of reins's own Python environments (where the install scripts put them). */
export function reinsPythonDirs(env: PythonEnv): string[] {
  const home = env.HOME || homedir();
  return [
    env.REINS_SCALE_PYTHON_DIR || join(home, ".cache", "reins", "scale-python"),
    env.REINS_METRICS_PYTHON_DIR || join(home, ".cache", "reins", "metrics-python"),
  ].map((d) => resolve(d));
}

function allowedPlaces(roots: readonly ProjectRoot[], env: PythonEnv): Place[] {
  const places: Place[] = roots.map((r) => ({ dir: r.dir, real: r.real, kind: "dir" }));
  for (const d of reinsPythonDirs(env)) places.push({ dir: d, real: realOr(d), kind: "dir" });
  if (env.REINS_METRICS_PYTHON && isAbsolute(env.REINS_METRICS_PYTHON)) {
    const f = resolve(env.REINS_METRICS_PYTHON);
    places.push({ dir: f, real: physical(f), kind: "file" });
  }
  for (const entry of (env.REINS_ALLOWED_PYTHON ?? "").split(":")) {
    if (!isAbsolute(entry)) continue;
    const p = resolve(entry);
    const isDir = entry.endsWith("/") || statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;
    places.push(isDir ? { dir: p, real: realOr(p), kind: "dir" } : { dir: p, real: physical(p), kind: "file" });
  }
  return places;
}

function inside(place: Place, p: string): boolean {
  return place.kind === "dir" ? isWithin(place.dir, p) || isWithin(place.real, p) : p === place.dir || p === place.real;
}

export type PythonCheck = { ok: true; path: string } | { ok: false; message: string };

/**
 * Whether `written` (a spec's `python`, relative to `specFile`'s directory) may be run; the
 * absolute path the plan carries when it may.
 */
export function checkPython(written: string, specFile: string, roots: readonly ProjectRoot[], env: PythonEnv): PythonCheck {
  const refused = (why: string): PythonCheck => ({ ok: false, message: `The python ${JSON.stringify(written)} is refused: ${why}.` });
  if (written.includes("\0")) return refused("it contains a NUL byte");
  const name = basename(written);
  if (written.endsWith("/") || name === "." || name === ".." || name === "") return refused("it names a directory, not an interpreter");
  const base = dirname(specFile);
  const abs = resolve(base, written);
  // As the kernel reads what was written (`link/..` climbs from the link's target), and as the
  // runtime will run the plan's path: both must stay inside an allowed place.
  const raw = isAbsolute(written) ? written : `${base}/${written}`;
  const places = allowedPlaces(roots, env);
  const where = [abs, physical(raw), physical(abs)];
  const outside = where.find((p) => !places.some((pl) => inside(pl, p)));
  if (outside === undefined) return { ok: true, path: abs };
  const project = roots[0]?.dir ?? "(none)";
  const reins = reinsPythonDirs(env).join(" or ");
  const how = outside === abs ? `it resolves to ${abs}` : `a symlinked directory leads to ${outside}`;
  return refused(
    `${how}, which is neither inside the project ${project} nor in a Python environment reins installs (${reins}) nor listed in REINS_ALLOWED_PYTHON`,
  );
}

/**
 * Checks the `python` written at `at` in `doc` (nothing when absent): a PythonNotAllowed error
 * there, or `use` called with the absolute path for the plan.
 */
export function checkPythonAt(doc: TypedDocument, at: (string | number)[], env: PythonEnv, use: (path: string) => void): Diagnostic[] {
  let written: unknown = doc.doc;
  for (const k of at) written = typeof written === "object" && written !== null ? (written as Record<string | number, unknown>)[k] : undefined;
  if (typeof written !== "string") return [];
  const r = checkPython(written, doc.source.absPath, doc.source.roots ?? ownDirectoryRoots(doc.source.absPath), env);
  if (r.ok) {
    use(r.path);
    return [];
  }
  return [makeDiagnostic("PythonNotAllowed", positionAt(doc.source, at), r.message, CODES.PythonNotAllowed)];
}
