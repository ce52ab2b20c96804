/**
 * Verifier spec → ResolvedVerifier: checks normalized to `{type, ...fields}` (shorthands expanded,
 * command strings made argv, numeric strings made numbers), defaults applied. Pure; assumes
 * schema-valid input.
 */
import type { ResolvedCheck, ResolvedVerifier } from "../contract/plan.js";
import { CHECK_SHORTHAND, NUMERIC_FIELDS, type CheckSpec, type CheckType } from "../schema/checks.js";
import type { VerifierSpec } from "../schema/verifier.js";

export const DEFAULT_SCRIPT_TIMEOUT_SECONDS = 120;
export const DEFAULT_PASS_THRESHOLD = 1;

function toArgv(command: string | string[]): string[] {
  return typeof command === "string" ? ["sh", "-c", command] : [...command];
}

/** A numeric string as users may write one in a check ("42", " 1e-3 "). */
const NUMERIC_STRING = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

function coerceNumbers(fields: Record<string, unknown>, paths: readonly string[]): void {
  for (const p of paths) {
    const [head, rest] = p.split(".");
    if (rest !== undefined) {
      const list = fields[head];
      if (Array.isArray(list)) {
        fields[head] = list.map((item) => {
          if (item === null || typeof item !== "object") return item;
          const copy = { ...(item as Record<string, unknown>) };
          coerceNumbers(copy, [rest]);
          return copy;
        });
      }
      continue;
    }
    const v = fields[head];
    if (typeof v === "string" && NUMERIC_STRING.test(v)) fields[head] = Number(v);
  }
}

/** `{fileExists: "a.txt", name: "x"}` → `{type: "fileExists", path: "a.txt", name: "x"}`. Assumes a schema-valid input. */
export function normalizeCheck(userCheck: CheckSpec | Record<string, unknown>): ResolvedCheck {
  const entries = Object.entries(userCheck as Record<string, unknown>);
  const typed = entries.find(([k]) => k !== "name" && k !== "weight");
  if (!typed) throw new Error("normalizeCheck: no check type key");
  const [type, body] = typed;
  const shorthand = CHECK_SHORTHAND[type as CheckType];
  const fields: Record<string, unknown> =
    (typeof body === "string" || Array.isArray(body)) && shorthand ? { [shorthand]: body } : { ...(body as Record<string, unknown>) };
  if (type === "commandExitsZero") fields.command = toArgv(fields.command as string | string[]);
  coerceNumbers(fields, NUMERIC_FIELDS[type as CheckType] ?? []);
  const out: ResolvedCheck = { type, ...fields };
  const u = userCheck as { name?: string; weight?: number };
  if (u.name !== undefined) out.name = u.name;
  if (u.weight !== undefined) out.weight = u.weight;
  return out;
}

/** A schema-valid VerifierSpec → ResolvedVerifier with defaults applied. */
export function resolveVerifierSpec(spec: VerifierSpec, name = "inline"): ResolvedVerifier {
  const out: ResolvedVerifier = {
    name,
    checks: (spec.checks ?? []).map((c) => normalizeCheck(c)),
    combine: { mode: spec.combine?.mode ?? "weighted", weights: { ...(spec.combine?.weights ?? {}) } as Record<string, number> },
    passThreshold: spec.passThreshold ?? DEFAULT_PASS_THRESHOLD,
  };
  if (spec.script) {
    out.script = {
      command: toArgv(spec.script.command),
      timeoutSeconds: spec.script.timeoutSeconds ?? DEFAULT_SCRIPT_TIMEOUT_SECONDS,
    };
  }
  if (spec.rubric) {
    out.rubric = {
      items: spec.rubric.items.map((it, i) =>
        typeof it === "string"
          ? { id: `item-${i + 1}`, criterion: it, weight: 1 }
          : { id: it.id ?? `item-${i + 1}`, criterion: it.criterion, weight: it.weight ?? 1 },
      ),
      files: [...(spec.rubric.files ?? [])],
    };
    if (spec.rubric.judge !== undefined) out.rubric.judge = spec.rubric.judge;
  }
  return out;
}
