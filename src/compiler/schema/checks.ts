/**
 * The zod schemas of verifier checks: each check type's object form, its shorthand, and the fields
 * that hold numbers. Users write a check as a single-key object (`- fileExists: hello.txt`) with
 * optional siblings `name` and `weight`; resolve/verifier.ts turns it into a ResolvedCheck
 * (`{type, ...fields}`), resolve/verifier-problems.ts finds what a schema cannot express.
 * Everything here stays exportable to draft-07 JSON Schema (no transforms, no refinements).
 */
import { z } from "zod";

const FilePath = z.string().min(1).max(4096).describe("Path of a file relative to the workspace root.");
const Text = z.union([z.string(), z.array(z.string()).min(1)]);
/**
 * Numbers in checks may also be written as strings: a numeric string, or a TaskFamily template
 * (`equals: "{{total}}"`), which renders to a string such as "42". `normalizeCheck` turns numeric
 * strings back into numbers; `validateCheck` reports any that are left.
 */
const NUMERIC_OR_TEMPLATE = /^(\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*|.*\{\{.*\}\}.*)$/s;
const INTEGER_OR_TEMPLATE = /^(\s*\+?\d+\s*|.*\{\{.*\}\}.*)$/s;
const Num = z.union([z.number(), z.string().regex(NUMERIC_OR_TEMPLATE, "a number (or a {{template}} that renders to one)")]);
const Tolerance = z
  .union([z.number().nonnegative(), z.string().regex(NUMERIC_OR_TEMPLATE, "a number (or a {{template}} that renders to one)")])
  .describe("Absolute tolerance for numeric comparisons (default 1e-9).");
const Count = z.union([z.number().int().nonnegative(), z.string().regex(INTEGER_OR_TEMPLATE, "a whole number (or a {{template}} that renders to one)")]);
const JsonPathQuery = z.string().min(1).describe("A simple JSONPath: `$`, `.key`, `['key']`, `[0]`, `[-1]`, `[*]`, `.*` (e.g. `$.totals[0].amount`).");
const PathQuery = {
  path: FilePath,
  query: JsonPathQuery,
  equals: z
    .unknown()
    .optional()
    .describe(
      "Expected value (deep equality; numbers within `tolerance`; a numeric or true/false string also matches that number or boolean). With a wildcard query, the list of matches.",
    ),
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
      flags: z
        .string()
        .regex(/^[imsu]*$/)
        .optional()
        .describe("Regex flags among i, m, s, u."),
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
    .describe(
      "A JSON (or YAML, by extension) document equals an expected one; the score is the share of matching items, the reason names the first difference.",
    ),
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
  mcpCall: z
    .strictObject({
      tool: z.string().min(1).describe("The MCP tool's name, as its server lists it."),
      server: z.string().min(1).optional().describe("The server's name (default: any of the rollout's servers)."),
      present: z.boolean().optional().describe("true (default): at least one such call succeeded; false: none did (a refused or failed call does not count)."),
      argumentsInclude: z
        .record(z.string(), z.unknown())
        .optional()
        .describe("The call's arguments hold these (a subset match: objects by key, other values by equality)."),
    })
    .describe("An MCP tool call the harness made (or did not make), read from the record reins kept while relaying it, never from the workspace."),
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
  mcpCall: "tool",
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

/** Fields that hold numbers (possibly written as strings), per check type; `cells.*` reaches into the list. */
export const NUMERIC_FIELDS: Partial<Record<CheckType, string[]>> = {
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

export type CheckSpec = z.input<typeof CheckSpecSchema>;
