/** Value checks: numeric (a number read from a file) and sameValue (one fact, several places). */
import type { ResolvedCheck } from "../../../compiler/contract/plan.js";
import { formatValue, numbersClose, toNumber, valuesEqual } from "../compare.js";
import { evaluateJsonPath, parseJsonPath } from "../jsonpath.js";
import { compileRegex, searchRegex } from "../safe-regex.js";
import { checkError, fail, formatOf, pass, str, type CheckContext, type CheckDefinition, type Loaded } from "./context.js";

const FIRST_NUMBER = /[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?/;

export interface ValueSource {
  path: string;
  query?: string;
  pattern?: string;
}

type Read = Loaded<unknown> | { ok: false; reason: string; error: { code: string; message: string } };

function sourceName(s: ValueSource): string {
  return s.query ? `${s.query} in ${s.path}` : s.pattern ? `/${s.pattern}/ in ${s.path}` : s.path;
}

/** Reads a value: at a JSONPath, from a regex match (group 1 if any), or the trimmed file. */
export async function readValue(s: ValueSource, ctx: CheckContext, fallback?: RegExp): Promise<Read> {
  if (s.query !== undefined) {
    const parsed = parseJsonPath(s.query);
    if (!parsed) return { ok: false, reason: "", error: { code: "InvalidQuery", message: `\`${s.query}\` is not a JSONPath reins understands` } };
    const doc = await ctx.readDocument(s.path, formatOf(s.path));
    if (!doc.ok) return doc;
    const m = evaluateJsonPath(doc.value, parsed);
    if (m.length === 0) return { ok: false, reason: `${s.query} in ${s.path} does not exist.` };
    return { ok: true, value: parsed.multi ? m : m[0] };
  }
  const text = await ctx.readText(s.path);
  if (!text.ok) return text;
  let re: RegExp | undefined = fallback;
  if (s.pattern !== undefined) {
    const c = compileRegex(s.pattern);
    if (!c.ok) return { ok: false, reason: "", error: { code: "InvalidPattern", message: `the pattern /${s.pattern}/ does not compile: ${c.error}` } };
    re = c.re;
  }
  if (!re) return { ok: true, value: text.value.trim() };
  const m = searchRegex(re, text.value);
  if (m.kind === "timeout") return { ok: false, reason: `matching ${re} against ${s.path} took too long.` };
  if (m.kind === "none") return { ok: false, reason: s.pattern ? `/${s.pattern}/ does not match ${s.path}.` : `${s.path} contains no number.` };
  return { ok: true, value: m.match[1] ?? m.match[0] };
}

export const valueChecks: CheckDefinition[] = [
  {
    type: "numeric",
    label: (c) => `numeric ${str(c, "path")}${c.query ? ` ${str(c, "query")}` : ""}`,
    async evaluate(c: ResolvedCheck, ctx) {
      const src: ValueSource = { path: str(c, "path"), ...(c.query ? { query: str(c, "query") } : {}), ...(c.pattern ? { pattern: str(c, "pattern") } : {}) };
      const v = await readValue(src, ctx, FIRST_NUMBER);
      if ("error" in v) return checkError(v.error.code, v.error.message);
      if (!v.ok) return fail(v.reason);
      const n = toNumber(typeof v.value === "string" ? v.value.replace(/,/g, "") : v.value);
      const where = sourceName(src);
      if (n === null) return fail(`${where} is ${formatValue(v.value)}, not a number.`);
      const tol = c.tolerance as number | undefined;
      if (typeof c.equals === "number" && !numbersClose(n, c.equals, tol)) {
        return fail(`${where} is ${n}, expected ${c.equals}${tol ? ` ± ${tol}` : ""}.`);
      }
      if (typeof c.min === "number" && n < c.min) return fail(`${where} is ${n}, expected at least ${c.min}.`);
      if (typeof c.max === "number" && n > c.max) return fail(`${where} is ${n}, expected at most ${c.max}.`);
      return pass(`${where} is ${n}.`);
    },
  },
  {
    type: "sameValue",
    label: (c) => `sameValue ${((c.sources as ValueSource[]) ?? []).map((s) => s.path).join(" = ")}`,
    async evaluate(c, ctx) {
      const sources = c.sources as ValueSource[];
      const values: unknown[] = [];
      for (const s of sources) {
        const v = await readValue(s, ctx);
        if ("error" in v) return checkError(v.error.code, v.error.message);
        if (!v.ok) return fail(v.reason);
        values.push(v.value);
      }
      // Numbers written as text ("42" in a report, 42 in JSON) compare as numbers.
      const nums = values.map((v) => toNumber(typeof v === "string" ? v.replace(/,/g, "") : v));
      const numeric = nums.every((n) => n !== null);
      const opts = { tolerance: c.tolerance as number | undefined, ignoreCase: c.ignoreCase === true };
      for (let i = 1; i < values.length; i++) {
        const same = numeric ? numbersClose(nums[i]!, nums[0]!, opts.tolerance) : valuesEqual(values[i], values[0], opts);
        if (!same) {
          return fail(`${sourceName(sources[i])} is ${formatValue(values[i])} but ${sourceName(sources[0])} is ${formatValue(values[0])}.`);
        }
      }
      return pass(`all ${sources.length} sources agree on ${formatValue(values[0])}.`);
    },
  },
];
