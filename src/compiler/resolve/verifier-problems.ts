/**
 * Problems of resolved checks and verifiers that a schema cannot express: bad regexes and
 * JSONPaths, missing or conflicting expectations, numbers left as strings, weights naming parts a
 * verifier does not have. Pure; the compiler turns each into a diagnostic at its position.
 */
import { makeDiagnostic, type Diagnostic, type SourcePosition } from "../contract/diagnostics.js";
import type { ResolvedCheck, ResolvedVerifier } from "../contract/plan.js";
import { NUMERIC_FIELDS, type CheckType } from "../schema/checks.js";

/** The JSONPath subset reins evaluates. */
export const JSONPATH_PATTERN = /^\$(?:\.[A-Za-z_$][\w$-]*|\.\*|\[(?:-?\d+|\*|'[^']*'|"[^"]*")\])*$/;

export interface CheckProblem {
  /** Field inside the check as text, e.g. "pattern" or "cells[0].row". */
  field: string;
  /** The same as path segments inside the check's object form, e.g. ["cells", 0, "row"]. */
  path: (string | number)[];
  message: string;
  hint: string;
}

function fieldPath(field: string): (string | number)[] {
  return field === "" ? [] : [...field.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((m) => (m[2] !== undefined ? Number(m[2]) : m[1]));
}

function problem(field: string, message: string, hint: string): CheckProblem {
  return { field, path: fieldPath(field), message, hint };
}

function regexProblem(field: string, pattern: unknown, flags?: unknown): CheckProblem[] {
  if (typeof pattern !== "string") return [];
  try {
    new RegExp(pattern, typeof flags === "string" ? flags : "");
    return [];
  } catch (e) {
    return [
      problem(
        field,
        `The regular expression /${pattern}/ does not compile: ${(e as Error).message}.`,
        "Fix the pattern (JavaScript syntax; escape backslashes in YAML double-quoted strings).",
      ),
    ];
  }
}

function queryProblem(field: string, query: unknown): CheckProblem[] {
  if (typeof query !== "string" || JSONPATH_PATTERN.test(query)) return [];
  return [problem(field, `\`${query}\` is not a JSONPath reins understands.`, "Use $, .key, ['key'], [0], [-1], [*] or .*, e.g. $.totals[0].amount.")];
}

/**
 * Semantic problems a schema cannot express: bad regexes and JSONPaths, missing or conflicting
 * expectations. Pure; the compiler turns each into a diagnostic at the check's position.
 */
export function validateCheck(check: ResolvedCheck): CheckProblem[] {
  const c = check as Record<string, unknown>;
  const out: CheckProblem[] = [];
  const need = (ok: boolean, field: string, message: string, hint: string) => {
    if (!ok) out.push(problem(field, message, hint));
  };
  switch (check.type) {
    case "fileEquals":
      need(
        (c.content === undefined) !== (c.hiddenFile === undefined),
        "content",
        "fileEquals needs exactly one of `content` and `hiddenFile`.",
        "Give the expected text inline with `content`, or name a hidden file with `hiddenFile`.",
      );
      break;
    case "fileMatches":
      out.push(...regexProblem("pattern", c.pattern, c.flags));
      break;
    case "jsonEquals":
      need(
        (c.value === undefined) !== (c.hiddenFile === undefined),
        "value",
        "jsonEquals needs exactly one of `value` and `hiddenFile`.",
        "Give the expected document inline with `value`, or name a hidden file with `hiddenFile`.",
      );
      out.push(...queryProblem("query", c.query));
      break;
    case "jsonPath":
    case "yamlPath":
      out.push(...queryProblem("query", c.query));
      break;
    case "numeric":
      out.push(...regexProblem("pattern", c.pattern), ...queryProblem("query", c.query));
      need(
        !(c.pattern !== undefined && c.query !== undefined),
        "query",
        "numeric takes `pattern` or `query`, not both.",
        "Keep one way of reading the number.",
      );
      need(
        c.equals !== undefined || c.min !== undefined || c.max !== undefined,
        "equals",
        "numeric needs `equals`, `min` or `max`.",
        "Say what the number must be.",
      );
      break;
    case "sameValue":
      ((c.sources as Record<string, unknown>[] | undefined) ?? []).forEach((s, i) => {
        out.push(...regexProblem(`sources[${i}].pattern`, s.pattern), ...queryProblem(`sources[${i}].query`, s.query));
      });
      break;
    case "csv":
      ((c.cells as Record<string, unknown>[] | undefined) ?? []).forEach((cell, i) => {
        need(
          (cell.row === undefined) !== (cell.where === undefined),
          `cells[${i}].row`,
          "A cell needs exactly one of `row` and `where`.",
          "Select the row by index (`row: 0`) or by values (`where: {name: ada}`).",
        );
      });
      break;
  }
  for (const p of NUMERIC_FIELDS[check.type as CheckType] ?? []) {
    const [head, rest] = p.split(".");
    const values: [string, unknown][] =
      rest === undefined
        ? [[head, c[head]]]
        : ((c[head] as Record<string, unknown>[] | undefined) ?? []).map((item, i) => [`${head}[${i}].${rest}`, item?.[rest]] as [string, unknown]);
    for (const [field, v] of values) {
      if (typeof v === "string")
        out.push(
          problem(field, `\`${field}\` is ${JSON.stringify(v)}, not a number.`, "Write a number; in a TaskFamily, make sure the template renders to one."),
        );
    }
  }
  if (check.type === "commandExitsZero" && typeof c.timeoutSeconds === "number" && (c.timeoutSeconds < 1 || c.timeoutSeconds > 3600)) {
    out.push(problem("timeoutSeconds", `timeoutSeconds ${c.timeoutSeconds} is outside 1–3600.`, "Give the command between 1 second and an hour."));
  }
  if (typeof c.tolerance === "number" && c.tolerance < 0) {
    out.push(problem("tolerance", `tolerance ${c.tolerance} is negative.`, "Use 0 or a positive tolerance."));
  }
  if (typeof c.min === "number" && typeof c.max === "number" && c.min > c.max) {
    out.push(problem("min", `min (${c.min}) is greater than max (${c.max}).`, "Swap the bounds."));
  }
  return out;
}

/** Problems of a whole resolved verifier: no parts, weights naming parts it does not have. Pure. */
export function validateVerifier(v: ResolvedVerifier): CheckProblem[] {
  const out: CheckProblem[] = [];
  const present = { checks: v.checks.length > 0, script: v.script !== undefined, rubric: v.rubric !== undefined };
  if (!present.checks && !present.script && !present.rubric) {
    out.push(problem("", "The verifier has no checks, script or rubric, so it cannot score anything.", "Add `checks`, a `script` or a `rubric`."));
  }
  const w = v.combine.weights;
  for (const key of Object.keys(w)) {
    const has = key === "code" ? present.checks || present.script : present[key as keyof typeof present];
    if (!has) {
      out.push(
        problem(
          `combine.weights.${key}`,
          `The weight \`${key}\` names a part this verifier does not have.`,
          key === "code" ? "`code` weighs checks and script; add one of them or drop the weight." : `Add \`${key}\` to the verifier or drop its weight.`,
        ),
      );
    }
  }
  if (w.code !== undefined && (w.checks !== undefined || w.script !== undefined)) {
    out.push(
      problem("combine.weights.code", "`code` already stands for checks and script together.", "Weigh either `code`, or `checks` and `script` separately."),
    );
  }
  if (v.combine.mode === "weighted" && Object.keys(w).length > 0 && Object.values(w).every((x) => x === 0)) {
    out.push(problem("combine.weights", "Every weight is 0.", "Give at least one part a positive weight."));
  }
  return out;
}

/**
 * Every problem of a resolved verifier as diagnostics: its checks' (`InvalidCheck`, at the field
 * inside the check) and its own (`InvalidVerifier`). `positionOf` maps a path under the verifier
 * spec (e.g. ["checks", 0, "fileMatches", "pattern"]) to a source position.
 */
export function verifierDiagnostics(v: ResolvedVerifier, positionOf: (path: (string | number)[]) => SourcePosition, notes?: string[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  v.checks.forEach((check, i) => {
    for (const p of validateCheck(check))
      out.push(makeDiagnostic("InvalidCheck", positionOf(["checks", i, check.type, ...p.path]), p.message, p.hint, "error", notes));
  });
  for (const p of validateVerifier(v)) out.push(makeDiagnostic("InvalidVerifier", positionOf(p.path), p.message, p.hint, "error", notes));
  return out;
}
