/**
 * The verifier spec: declarative checks, a script, a rubric, and how their scores combine.
 *
 * Users write each check as a single-key object (`- fileExists: hello.txt`) with optional siblings
 * `name` and `weight`; `normalizeCheck` turns it into a ResolvedCheck (`{type, ...fields}`).
 * Everything here stays exportable to draft-07 JSON Schema (no transforms, no refinements).
 */
import { z } from "zod";
import type { ResolvedCheck, ResolvedVerifier } from "../contract/plan.js";

const FilePath = z.string().min(1).max(4096).describe("Path of a file relative to the workspace root.");
const Text = z.union([z.string(), z.array(z.string()).min(1)]);
/**
 * Numbers in checks may also be written as strings: a numeric string, or a TaskFamily template
 * (`equals: "{{total}}"`), which renders to a string such as "42". `normalizeCheck` turns numeric
 * strings back into numbers; `validateCheck` reports any that are left.
 */
const NUMERIC_STRING = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;
const NUMERIC_OR_TEMPLATE = /^(\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*|.*\{\{.*\}\}.*)$/s;
const INTEGER_OR_TEMPLATE = /^(\s*\+?\d+\s*|.*\{\{.*\}\}.*)$/s;
const Num = z.union([z.number(), z.string().regex(NUMERIC_OR_TEMPLATE, "a number (or a {{template}} that renders to one)")]);
const Tolerance = z
  .union([z.number().nonnegative(), z.string().regex(NUMERIC_OR_TEMPLATE, "a number (or a {{template}} that renders to one)")])
  .describe("Absolute tolerance for numeric comparisons (default 1e-9).");
const Count = z.union([z.number().int().nonnegative(), z.string().regex(INTEGER_OR_TEMPLATE, "a whole number (or a {{template}} that renders to one)")]);
const JsonPathQuery = z
  .string()
  .min(1)
  .describe("A simple JSONPath: `$`, `.key`, `['key']`, `[0]`, `[-1]`, `[*]`, `.*` (e.g. `$.totals[0].amount`).");
const PathQuery = {
  path: FilePath,
  query: JsonPathQuery,
  equals: z
    .unknown()
    .optional()
    .describe("Expected value (deep equality; numbers within `tolerance`; a numeric or true/false string also matches that number or boolean). With a wildcard query, the list of matches."),
  exists: z.boolean().optional().describe("Whether the query must match (default true)."),
  length: Count.optional().describe("Expected length of the matched array or string, or key count of an object."),
  tolerance: Tolerance.optional(),
  ignoreCase: z.boolean().optional().describe("Compare strings case-insensitively."),
};

const ValueSource = z
  .strictObject({
    path: FilePath,
    query: JsonPathQuery.optional().describe("Read the value at this JSONPath (JSON or YAML file)."),
    pattern: z.string().optional().describe("Read the first match of this regular expression (capture group 1 if present)."),
  })
  .describe("Where a value is read: the whole trimmed file, a JSONPath, or a regex match.");

const CsvCell = z
  .strictObject({
    row: Count.optional().describe("0-based data row (header excluded)."),
    where: z.record(z.string(), z.string()).optional().describe("Select the first row whose columns have these values."),
    column: z.union([z.string(), Count]).describe("Column name (with a header) or 0-based index."),
    equals: z.union([z.string(), z.number()]).describe("Expected value; numeric values (and numeric strings) compare as numbers within `tolerance`."),
    tolerance: Tolerance.optional(),
  })
  .describe("One expected cell: `row` or `where` selects the row.");

/** Object form of every check type. Field `path` is always workspace-relative. */
export const checkSchemas = {
  fileExists: z.strictObject({ path: FilePath }).describe("A regular file exists at `path`."),
  fileAbsent: z.strictObject({ path: FilePath }).describe("Nothing exists at `path`."),
  directoryExists: z.strictObject({ path: FilePath }).describe("A directory exists at `path`."),
  fileEquals: z
    .strictObject({
      path: FilePath,
      content: z.string().optional().describe("Expected content."),
      hiddenFile: z.string().optional().describe("Compare with this hidden file instead of `content`."),
      trim: z.boolean().optional().describe("Ignore leading/trailing whitespace and CRLF vs LF (default true)."),
      ignoreCase: z.boolean().optional(),
    })
    .describe("The file's content equals `content` (or a hidden file)."),
  fileContains: z
    .strictObject({
      path: FilePath,
      text: Text.describe("Substring(s) that must all appear; the score is the fraction found."),
      ignoreCase: z.boolean().optional(),
    })
    .describe("The file contains every given substring."),
  fileNotContains: z
    .strictObject({
      path: FilePath,
      text: Text.describe("Substring(s) that must not appear."),
      ignoreCase: z.boolean().optional(),
    })
    .describe("The file exists and contains none of the given substrings."),
  fileMatches: z
    .strictObject({
      path: FilePath,
      pattern: z.string().min(1).describe("JavaScript regular expression that must match somewhere in the file."),
      flags: z.string().regex(/^[imsu]*$/).optional().describe("Regex flags among i, m, s, u."),
    })
    .describe("The file matches a regular expression."),
  jsonValid: z.strictObject({ path: FilePath }).describe("The file is valid JSON."),
  jsonPath: z.strictObject(PathQuery).describe("A JSON file has the expected value at a JSONPath."),
  jsonSchema: z
    .strictObject({
      path: FilePath,
      schema: z.record(z.string(), z.unknown()).describe("A JSON Schema (draft-07) the document must satisfy."),
    })
    .describe("A JSON file (YAML when the name ends in .yaml/.yml) satisfies a JSON Schema."),
  jsonEquals: z
    .strictObject({
      path: FilePath,
      hiddenFile: z.string().optional().describe("Hidden JSON or YAML file holding the expected document (a TaskFamily renders it with `{{json …}}`)."),
      value: z.unknown().optional().describe("The expected document inline (instead of `hiddenFile`)."),
      query: JsonPathQuery.optional().describe("Compare only the value at this JSONPath (in both documents)."),
      tolerance: Tolerance.optional(),
      ignoreOrder: z.boolean().optional().describe("Compare arrays as multisets."),
      ignoreCase: z.boolean().optional(),
    })
    .describe("A JSON (or YAML, by extension) document equals an expected one; the score is the share of matching items, the reason names the first difference."),
  yamlValid: z.strictObject({ path: FilePath }).describe("The file is valid YAML."),
  yamlPath: z.strictObject(PathQuery).describe("A YAML file has the expected value at a JSONPath."),
  csv: z
    .strictObject({
      path: FilePath,
      delimiter: z.string().min(1).max(1).optional().describe("Field delimiter (default `,`)."),
      header: z.boolean().optional().describe("Whether the first row is a header (default true)."),
      columns: z.array(z.string()).optional().describe("Columns that must be present in the header."),
      exactColumns: z.boolean().optional().describe("Require exactly `columns`, in that order."),
      rowCount: Count.optional().describe("Exact number of data rows."),
      minRows: Count.optional(),
      maxRows: Count.optional(),
      cells: z.array(CsvCell).optional().describe("Expected cell values."),
      tolerance: Tolerance.optional(),
    })
    .describe("A CSV file parses and has the expected columns, row count and cells; the score is the fraction of assertions met."),
  lineCount: z
    .strictObject({
      path: FilePath,
      equals: Count.optional(),
      min: Count.optional(),
      max: Count.optional(),
      skipEmpty: z.boolean().optional().describe("Count only non-blank lines (default false)."),
    })
    .describe("The file's number of lines is within bounds."),
  numeric: z
    .strictObject({
      path: FilePath,
      pattern: z.string().optional().describe("Regex whose first match (capture group 1 if present) holds the number. Default: the first number in the file."),
      query: JsonPathQuery.optional().describe("Read the number at this JSONPath instead (JSON or YAML file)."),
      equals: Num.optional(),
      min: Num.optional(),
      max: Num.optional(),
      tolerance: Tolerance.optional(),
    })
    .describe("A number read from a file equals `equals` within `tolerance` and lies in [min, max]."),
  sameValue: z
    .strictObject({
      sources: z.array(ValueSource).min(2).describe("Places the same fact is read from."),
      tolerance: Tolerance.optional(),
      ignoreCase: z.boolean().optional(),
    })
    .describe("The same value appears in every source (cross-file consistency)."),
  fileCount: z
    .strictObject({
      glob: z.string().min(1).describe("Glob over workspace paths: `*`, `**`, `?`, `{a,b}`."),
      equals: Count.optional(),
      min: Count.optional(),
      max: Count.optional(),
    })
    .describe("The number of regular files matching a glob is within bounds (default: at least one)."),
  commandExitsZero: z
    .strictObject({
      command: z.union([z.string(), z.array(z.string()).min(1)]).describe("argv, or a string run with `sh -c`, in the workspace."),
      timeoutSeconds: Count.optional().describe("Default 60, at most 3600."),
    })
    .describe("A command run in the sandbox, in the workspace, exits with status 0."),
};

export type CheckType = keyof typeof checkSchemas;
export const CHECK_TYPES = Object.keys(checkSchemas) as CheckType[];

/** The field a plain-string shorthand fills (`- fileExists: hello.txt`; commandExitsZero also takes an argv list). */
export const CHECK_SHORTHAND: Partial<Record<CheckType, string>> = {
  fileExists: "path",
  fileAbsent: "path",
  directoryExists: "path",
  jsonValid: "path",
  yamlValid: "path",
  fileCount: "glob",
  commandExitsZero: "command",
};

const CheckName = z.string().min(1).max(200).describe("Label shown in reports (default: type and path).");
const CheckWeight = z.number().nonnegative().describe("Weight inside the checks part (default 1).");

function checkItem<T extends CheckType>(type: T) {
  const form = checkSchemas[type];
  const value =
    type === "commandExitsZero"
      ? z.union([z.string().min(1), z.array(z.string()).min(1), form])
      : CHECK_SHORTHAND[type]
        ? z.union([z.string().min(1), form])
        : form;
  return z
    .strictObject({ [type]: value, name: CheckName.optional(), weight: CheckWeight.optional() } as {
      [K in T]: typeof value;
    } & { name: z.ZodOptional<typeof CheckName>; weight: z.ZodOptional<typeof CheckWeight> })
    .describe(form.description ?? type);
}

export const CheckSpecSchema = z
  .union(CHECK_TYPES.map((t) => checkItem(t)) as unknown as [ReturnType<typeof checkItem>, ...ReturnType<typeof checkItem>[]])
  .describe("One check, written as a single-key object: `- fileExists: out.txt`, `- jsonPath: {path: a.json, query: $.n, equals: 3}`.");

export const ScriptSpecSchema = z
  .strictObject({
    command: z.union([z.string(), z.array(z.string()).min(1)]).describe(
      "argv, or a string run with `sh -c`. Runs in the workspace after the harness exits; $REINS_HIDDEN is the directory of the task's hidden files. Prints `{\"reward\": x, \"subscores\": {...}}` on stdout and exits 0.",
    ),
    timeoutSeconds: z.number().int().positive().max(3600).optional().describe("Default 120. A script that runs longer is killed (whole process tree) and reported as a verifier error."),
  })
  .describe("A scoring command run in the sandbox.");

export const RubricItemSpecSchema = z.union([
  z.string().min(1).describe("A criterion (id: item-<n>, weight 1)."),
  z.strictObject({
    id: z.string().regex(/^[A-Za-z0-9_.-]+$/).optional().describe("Stable id the judge answers with (default item-<n>)."),
    criterion: z.string().min(1).describe("What the judge checks, in one or two sentences."),
    weight: z.number().nonnegative().optional().describe("Default 1."),
  }),
]);

export const RubricSpecSchema = z
  .strictObject({
    judge: z
      .string()
      .optional()
      .describe("Name of the Model document that grades this rubric, through its own engine (default: the policy, the Experiment's or Evaluation's model). The plan states the judge of every rubric."),
    items: z.array(RubricItemSpecSchema).min(1).describe("Criteria scored in [0, 1] by the judge."),
    files: z.array(z.string().min(1)).optional().describe("Workspace globs shown to the judge (bounded in size)."),
  })
  .describe("Items judged by a model from the instruction and the workspace files.");

const PartWeight = z.number().nonnegative();
export const CombineSpecSchema = z
  .strictObject({
    mode: z.enum(["weighted", "all", "min", "any"]).describe(
      "weighted: weighted mean of part scores; all: 1 if every part reaches passThreshold else 0; min: lowest part score; any: 1 if some part reaches passThreshold else 0.",
    ),
    weights: z
      .strictObject({
        checks: PartWeight.optional(),
        script: PartWeight.optional(),
        rubric: PartWeight.optional(),
        code: PartWeight.optional().describe("checks and script together (their mean)."),
      })
      .optional()
      .describe("Weights for `weighted` (default: equal), e.g. {code: 0.7, rubric: 0.3}."),
  })
  .describe("How the parts' scores make the reward.");

export const VerifierSpecSchema = z
  .strictObject({
    checks: z.array(CheckSpecSchema).optional().describe("Declarative checks on the final workspace; the part's score is their weighted mean."),
    script: ScriptSpecSchema.optional(),
    rubric: RubricSpecSchema.optional(),
    combine: CombineSpecSchema.optional().describe("Default: weighted with equal weights."),
    passThreshold: z.number().min(0).max(1).optional().describe("Reward at or above which an attempt counts as passed (default 1)."),
  })
  .describe("How a final workspace is scored: checks, a script and/or a rubric, combined.");

export type CheckSpec = z.input<typeof CheckSpecSchema>;
export type VerifierSpec = z.input<typeof VerifierSpecSchema>;

export const DEFAULT_SCRIPT_TIMEOUT_SECONDS = 120;
export const DEFAULT_PASS_THRESHOLD = 1;

function toArgv(command: string | string[]): string[] {
  return typeof command === "string" ? ["sh", "-c", command] : [...command];
}

/** Fields that hold numbers (possibly written as strings), per check type; `cells.*` reaches into the list. */
const NUMERIC_FIELDS: Partial<Record<CheckType, string[]>> = {
  jsonPath: ["length", "tolerance"],
  jsonEquals: ["tolerance"],
  yamlPath: ["length", "tolerance"],
  csv: ["rowCount", "minRows", "maxRows", "tolerance", "cells.row", "cells.tolerance"],
  lineCount: ["equals", "min", "max"],
  numeric: ["equals", "min", "max", "tolerance"],
  sameValue: ["tolerance"],
  fileCount: ["equals", "min", "max"],
  commandExitsZero: ["timeoutSeconds"],
};

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
    return [problem(field, `The regular expression /${pattern}/ does not compile: ${(e as Error).message}.`, "Fix the pattern (JavaScript syntax; escape backslashes in YAML double-quoted strings).")];
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
      need((c.content === undefined) !== (c.hiddenFile === undefined), "content", "fileEquals needs exactly one of `content` and `hiddenFile`.", "Give the expected text inline with `content`, or name a hidden file with `hiddenFile`.");
      break;
    case "fileMatches":
      out.push(...regexProblem("pattern", c.pattern, c.flags));
      break;
    case "jsonEquals":
      need((c.value === undefined) !== (c.hiddenFile === undefined), "value", "jsonEquals needs exactly one of `value` and `hiddenFile`.", "Give the expected document inline with `value`, or name a hidden file with `hiddenFile`.");
      out.push(...queryProblem("query", c.query));
      break;
    case "jsonPath":
    case "yamlPath":
      out.push(...queryProblem("query", c.query));
      break;
    case "numeric":
      out.push(...regexProblem("pattern", c.pattern), ...queryProblem("query", c.query));
      need(!(c.pattern !== undefined && c.query !== undefined), "query", "numeric takes `pattern` or `query`, not both.", "Keep one way of reading the number.");
      need(c.equals !== undefined || c.min !== undefined || c.max !== undefined, "equals", "numeric needs `equals`, `min` or `max`.", "Say what the number must be.");
      break;
    case "sameValue":
      ((c.sources as Record<string, unknown>[] | undefined) ?? []).forEach((s, i) => {
        out.push(...regexProblem(`sources[${i}].pattern`, s.pattern), ...queryProblem(`sources[${i}].query`, s.query));
      });
      break;
    case "csv":
      ((c.cells as Record<string, unknown>[] | undefined) ?? []).forEach((cell, i) => {
        need((cell.row === undefined) !== (cell.where === undefined), `cells[${i}].row`, "A cell needs exactly one of `row` and `where`.", "Select the row by index (`row: 0`) or by values (`where: {name: ada}`).");
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
      if (typeof v === "string") out.push(problem(field, `\`${field}\` is ${JSON.stringify(v)}, not a number.`, "Write a number; in a TaskFamily, make sure the template renders to one."));
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
      out.push(problem(`combine.weights.${key}`, `The weight \`${key}\` names a part this verifier does not have.`, key === "code" ? "`code` weighs checks and script; add one of them or drop the weight." : `Add \`${key}\` to the verifier or drop its weight.`));
    }
  }
  if (w.code !== undefined && (w.checks !== undefined || w.script !== undefined)) {
    out.push(problem("combine.weights.code", "`code` already stands for checks and script together.", "Weigh either `code`, or `checks` and `script` separately."));
  }
  if (v.combine.mode === "weighted" && Object.keys(w).length > 0 && Object.values(w).every((x) => x === 0)) {
    out.push(problem("combine.weights", "Every weight is 0.", "Give at least one part a positive weight."));
  }
  return out;
}
