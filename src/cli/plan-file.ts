/**
 * Reading a plan.json (`reins diff`, `--resume`): a missing, unparseable or non-plan file is a
 * Problem (InvalidPlan), never a crash deeper in. Only the outline is checked: the version and the
 * fields every command reads first.
 */
import { readFileSync } from "node:fs";
import type { Plan } from "../compiler/index.js";
import { failWith, succeed, type Outcome } from "../compiler/index.js";

export function readPlanFile(file: string): Outcome<Plan> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "it does not exist" : code === "EISDIR" ? "it is a directory" : (err as Error).message;
    return failWith("InvalidPlan", `Cannot read ${file}: ${why}.`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return failWith("InvalidPlan", `${file} is not valid JSON (${(err as Error).message.split("\n")[0]}).`);
  }
  const missing = planOutlineProblem(value);
  if (missing) return failWith("InvalidPlan", `${file} is not a reins plan: ${missing}.`);
  return succeed(value as Plan);
}

/** What keeps a JSON value from being a plan (version 1), or undefined. */
export function planOutlineProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "it is not a JSON object";
  const p = value as Record<string, unknown>;
  if (p.planVersion !== 1) return p.planVersion === undefined ? "it has no planVersion" : `its planVersion is ${JSON.stringify(p.planVersion)}, not 1`;
  if (p.kind !== "Experiment" && p.kind !== "Evaluation") return "its kind is neither Experiment nor Evaluation";
  for (const key of ["name", "hash", "root"]) if (typeof p[key] !== "string") return `its \`${key}\` is not a string`;
  for (const key of ["tasks", "harnesses", "pairs", "steps", "heldOutTasks", "manifests"]) if (!Array.isArray(p[key])) return `its \`${key}\` is not a list`;
  for (const key of ["sandbox", "estimate"]) if (typeof p[key] !== "object" || p[key] === null) return `its \`${key}\` is missing`;
  return undefined;
}
