/** JSON and YAML checks: jsonValid, jsonPath, jsonSchema, yamlValid, yamlPath. */
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import type { ResolvedCheck } from "../../../compiler/contract/plan.js";
import { parse as parseYamlText } from "yaml";
import { describeMismatch, firstDifference, formatValue, matchFraction, valuesEqual } from "../compare.js";
import { evaluateJsonPath, parseJsonPath } from "../jsonpath.js";
import { checkError, fail, formatOf, pass, str, type CheckContext, type CheckDefinition, type CheckOutcome } from "./context.js";

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
let ajv: Ajv | undefined;
const validators = new Map<string, ValidateFunction | string>();

/** Compiled validator (cached by schema text), or the compile error message. */
function compileSchema(schema: unknown): ValidateFunction | string {
  const key = JSON.stringify(schema);
  let v = validators.get(key);
  if (v === undefined) {
    ajv ??= addFormats(new Ajv({ allErrors: true, strict: false }));
    try {
      v = ajv.compile(schema as object);
    } catch (e) {
      v = (e as Error).message;
    }
    if (validators.size > 500) validators.clear();
    validators.set(key, v);
  }
  return v;
}

function lengthOf(v: unknown): number | null {
  if (Array.isArray(v) || typeof v === "string") return v.length;
  if (v !== null && typeof v === "object") return Object.keys(v).length;
  return null;
}

async function evaluatePath(c: ResolvedCheck, ctx: CheckContext, format: "json" | "yaml"): Promise<CheckOutcome> {
  const path = str(c, "path");
  const query = str(c, "query");
  const parsed = parseJsonPath(query);
  if (!parsed) return checkError("InvalidQuery", `\`${query}\` is not a JSONPath reins understands`);
  const doc = await ctx.readDocument(path, format);
  if (!doc.ok) return fail(doc.reason);
  const matches = evaluateJsonPath(doc.value, parsed);
  const exists = c.exists !== false;
  const at = `${query} in ${path}`;
  if (!exists)
    return matches.length === 0 ? pass(`${at} is absent.`) : fail(`${at} exists (${formatValue(parsed.multi ? matches : matches[0])}) but should not.`);
  if (matches.length === 0) return fail(`${at} does not exist.`);
  const actual = parsed.multi ? matches : matches[0];
  if (c.length !== undefined) {
    const n = lengthOf(actual);
    if (n !== c.length) return fail(`${at} has length ${n ?? "(not a list, string or object)"}, expected ${c.length}.`);
  }
  if (c.equals !== undefined) {
    const opts = { tolerance: c.tolerance as number | undefined, ignoreCase: c.ignoreCase === true };
    if (!valuesEqual(actual, c.equals, opts)) return fail(`${at}: ${describeMismatch(actual, c.equals)}.`);
    return pass(`${at} is ${formatValue(actual)}.`);
  }
  return pass(`${at} exists (${formatValue(actual)}).`);
}

export const structuredChecks: CheckDefinition[] = [
  {
    type: "jsonValid",
    label: (c) => `jsonValid ${str(c, "path")}`,
    async evaluate(c, ctx) {
      const doc = await ctx.readDocument(str(c, "path"), "json");
      return doc.ok ? pass(`${str(c, "path")} is valid JSON.`) : fail(doc.reason);
    },
  },
  {
    type: "yamlValid",
    label: (c) => `yamlValid ${str(c, "path")}`,
    async evaluate(c, ctx) {
      const doc = await ctx.readDocument(str(c, "path"), "yaml");
      return doc.ok ? pass(`${str(c, "path")} is valid YAML.`) : fail(doc.reason);
    },
  },
  {
    type: "jsonPath",
    label: (c) => `jsonPath ${str(c, "path")} ${str(c, "query")}`,
    evaluate: (c, ctx) => evaluatePath(c, ctx, "json"),
  },
  {
    type: "yamlPath",
    label: (c) => `yamlPath ${str(c, "path")} ${str(c, "query")}`,
    evaluate: (c, ctx) => evaluatePath(c, ctx, "yaml"),
  },
  {
    type: "jsonSchema",
    label: (c) => `jsonSchema ${str(c, "path")}`,
    async evaluate(c, ctx) {
      const path = str(c, "path");
      const validate = compileSchema(c.schema);
      if (typeof validate === "string") return checkError("InvalidSchema", `the JSON Schema of this check does not compile: ${validate}`);
      const doc = await ctx.readDocument(path, formatOf(path));
      if (!doc.ok) return fail(doc.reason);
      if (validate(doc.value)) return pass(`${path} satisfies the schema.`);
      const errs = (validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`);
      const more = (validate.errors?.length ?? 0) > 3 ? ` (and ${validate.errors!.length - 3} more)` : "";
      return fail(`${path} does not satisfy the schema: ${errs.join("; ")}${more}.`);
    },
  },
];

/** jsonEquals: the document (or the value at `query`) equals the expected one. */
export const jsonEqualsCheck: CheckDefinition = {
  type: "jsonEquals",
  label: (c) => `jsonEquals ${str(c, "path")}${c.query ? ` ${str(c, "query")}` : ""}`,
  async evaluate(c, ctx) {
    const path = str(c, "path");
    let expected: unknown = c.value;
    if (c.hiddenFile !== undefined) {
      const hf = str(c, "hiddenFile");
      const text = await ctx.readText(hf, "hidden");
      if (!text.ok) return checkError("HiddenFileUnavailable", text.reason);
      try {
        expected = formatOf(hf) === "yaml" ? parseYamlText(text.value) : JSON.parse(text.value);
      } catch (e) {
        return checkError("HiddenFileInvalid", `hidden file ${hf} does not parse: ${(e as Error).message.split("\n")[0]}`);
      }
    }
    const doc = await ctx.readDocument(path, formatOf(path));
    if (!doc.ok) return fail(doc.reason);
    let actual = doc.value;
    let where = path;
    if (c.query !== undefined) {
      const parsed = parseJsonPath(str(c, "query"));
      if (!parsed) return checkError("InvalidQuery", `\`${str(c, "query")}\` is not a JSONPath reins understands`);
      const pick = (v: unknown) => {
        const m = evaluateJsonPath(v, parsed);
        return parsed.multi ? m : m[0];
      };
      actual = pick(actual);
      expected = pick(expected);
      where = `${str(c, "query")} in ${path}`;
      if (actual === undefined) return fail(`${where} does not exist.`);
    }
    const opts = { tolerance: c.tolerance as number | undefined, ignoreCase: c.ignoreCase === true, ignoreOrder: c.ignoreOrder === true };
    const diff = firstDifference(actual, expected, opts);
    if (diff === null) return pass(`${where} has the expected content.`);
    const at = diff.startsWith("$") ? diff.slice(1) : diff;
    return fail(`${path} differs from the expected document: ${c.query ? str(c, "query") : "$"}${at}.`, matchFraction(actual, expected, opts));
  },
};
