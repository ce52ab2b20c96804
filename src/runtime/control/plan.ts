/**
 * The plan that runs. `finishPlan` is the one place a compiled plan is finished: it adds the
 * Kubernetes objects the plan implies (derived from hashed content only, so the hash does not
 * cover them and needs not). `reins plan` writes the finished plan; `reins run/eval` run either a
 * freshly finished plan or a reviewed plan file, which runs only as written: its hash must match
 * its content and its derived parts must be the ones its content implies.
 */
import { readFileSync } from "node:fs";
import { canonicalJson, CODES, compilePlan, hashPlan, makeDiagnostic, type CompileOptions, type Plan, type Result } from "../../compiler/index.js";
import { planManifests } from "../k8s/plan-manifests.js";

/** The finished plan: the compiled plan plus the objects it implies. Pure. */
export function finishPlan(plan: Plan): Plan {
  return { ...plan, manifests: planManifests(plan) };
}

/** Compile specs into the finished plan (what `reins plan --out` writes and `reins run/eval` run). */
export function planSpecs(paths: readonly string[], opts: CompileOptions = {}): Result<Plan | undefined> {
  const compiled = compilePlan(paths, opts);
  return { value: compiled.value ? finishPlan(compiled.value) : undefined, diagnostics: compiled.diagnostics };
}

/**
 * True when the arguments are one `.json` file meant as a plan: it holds `planVersion`, or it is
 * no spec document (no `apiVersion`), so that a damaged plan file is reported as one (InvalidPlan)
 * rather than as a spec that does not parse.
 */
export function isPlanFile(paths: readonly string[]): boolean {
  if (paths.length !== 1 || !paths[0]!.endsWith(".json")) return false;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(paths[0]!, "utf8")) as unknown;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === undefined; // unreadable: let the spec loader say why
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return true;
  return "planVersion" in value || !("apiVersion" in value);
}

/**
 * Read a plan file and check it runs as written: valid JSON of plan version 1, a hash equal to
 * the hash of its content, and the manifests its content implies. Problems are diagnostics
 * (InvalidPlan, PlanEdited) at the file.
 */
export function readPlanFile(file: string): Result<Plan | undefined> {
  const at = { file, line: 1, column: 1 };
  const fail = (code: "FileNotFound" | "InvalidPlan" | "PlanEdited", message: string): Result<undefined> => ({
    value: undefined,
    diagnostics: [makeDiagnostic(code, at, message, CODES[code])],
  });
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    return fail("FileNotFound", `Cannot read ${file}: ${(err as Error).message}.`);
  }
  let plan: Plan;
  try {
    plan = JSON.parse(text) as Plan;
  } catch (err) {
    return fail("InvalidPlan", `${file} is not valid JSON: ${(err as Error).message}.`);
  }
  if (plan?.planVersion !== 1 || typeof plan.hash !== "string" || !Array.isArray(plan.steps) || !Array.isArray(plan.tasks) || !Array.isArray(plan.manifests)) {
    return fail("InvalidPlan", `${file} is not a reins plan (planVersion 1).`);
  }
  let actual: string;
  try {
    actual = hashPlan(plan);
  } catch (err) {
    return fail("InvalidPlan", `${file} is not a complete reins plan: ${(err as Error).message}.`);
  }
  if (actual !== plan.hash) {
    return fail("PlanEdited", `${file} was changed after it was planned: its content hashes to ${short(actual)}, not to the ${short(plan.hash)} it states.`);
  }
  if (canonicalJson(plan.manifests) !== canonicalJson(planManifests(plan))) {
    return fail("PlanEdited", `${file} was changed after it was planned: its manifests are not the ones plan ${short(plan.hash)} implies.`);
  }
  return { value: plan, diagnostics: [] };
}

function short(hash: string): string {
  return hash.replace(/^sha256:/, "").slice(0, 12);
}
