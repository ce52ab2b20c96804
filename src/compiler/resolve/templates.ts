/**
 * The Handlebars environment for task families: isolated (`Handlebars.create()`), strict
 * (unknown parameters are errors), `noEscape`, only our own helpers (`knownHelpersOnly`),
 * no prototype access. Parameter values are data: they are never rendered again, so a value
 * containing `{{…}}` stays literal (no template injection).
 */
import Handlebars from "handlebars";
import { LimitExceeded, MAX_RENDERED_STRING_BYTES, type TemplateBudget, formatBytes } from "./limits.js";

type Compiled = (ctx: Record<string, unknown>) => string;

// biome-ignore lint/suspicious/noExplicitAny: template helpers take whatever the template passes
const HELPERS: Record<string, (...args: any[]) => unknown> = {
  upper: (s: unknown) => String(s).toUpperCase(),
  lower: (s: unknown) => String(s).toLowerCase(),
  slug: (s: unknown) => slugify(String(s)),
  json: (v: unknown) => JSON.stringify(v),
  add: (a: unknown, b: unknown) => Number(a) + Number(b),
  sub: (a: unknown, b: unknown) => Number(a) - Number(b),
  mul: (a: unknown, b: unknown) => Number(a) * Number(b),
  div: (a: unknown, b: unknown) => Number(a) / Number(b),
  mod: (a: unknown, b: unknown) => Number(a) % Number(b),
  pad: (v: unknown, width: unknown, ch: unknown) => {
    checkSize("pad", Number(width) || 0);
    return String(v).padStart(Number(width), typeof ch === "string" ? ch : "0");
  },
  eq: (a: unknown, b: unknown) => a === b,
  ne: (a: unknown, b: unknown) => a !== b,
  lt: (a: unknown, b: unknown) => Number(a) < Number(b),
  gt: (a: unknown, b: unknown) => Number(a) > Number(b),
  and: (a: unknown, b: unknown) => Boolean(a) && Boolean(b),
  or: (a: unknown, b: unknown) => Boolean(a) || Boolean(b),
  not: (a: unknown) => !a,
  join: (list: unknown, sep: unknown) => (Array.isArray(list) ? list.join(typeof sep === "string" ? sep : ", ") : String(list)),
  default: (v: unknown, d: unknown) => (v === undefined || v === null || v === "" ? d : v),
  indent: (s: unknown, n: unknown) => {
    const lines = String(s).split("\n");
    const width = Math.max(0, Number(n) || 0);
    checkSize("indent", String(s).length + (lines.length - 1) * width);
    return lines.join(`\n${" ".repeat(width)}`);
  },
  repeat: (s: unknown, n: unknown) => {
    const text = String(s);
    const times = Math.max(0, Math.min(10_000, Number(n) || 0));
    checkSize("repeat", text.length * times);
    return text.repeat(times);
  },
  range: (a: unknown, b: unknown) => {
    const lo = Number(a);
    const hi = Number(b);
    const count = Number.isFinite(lo) && Number.isFinite(hi) && hi >= lo ? Math.min(100_000, Math.floor(hi - lo) + 1) : 0;
    // The list is work before any loop runs over it: spent before it is built.
    active?.spend(count, 0, activeLine);
    const out: number[] = [];
    for (let i = 0; i < count; i++) out.push(lo + i);
    return out;
  },
  pick: (list: unknown, i: unknown) => (Array.isArray(list) && list.length > 0 ? list[Math.abs(Number(i)) % list.length] : undefined),
};

export const HELPER_NAMES = Object.keys(HELPERS);

/** The budget of the render in progress (rendering is synchronous), and the template line being run. */
let active: TemplateBudget | undefined;
let activeLine: number | undefined;

/** A helper's output is measured before it is built. */
function checkSize(helper: string, n: number): void {
  if (n > MAX_RENDERED_STRING_BYTES)
    throw new LimitExceeded(
      "RenderedTooLarge",
      `The helper "${helper}" would produce ${formatBytes(n)}; the limit is ${formatBytes(MAX_RENDERED_STRING_BYTES)} per string.`,
      activeLine,
    );
}

interface HelperOptions {
  loc?: { start?: { line?: number } };
  fn?: (...a: unknown[]) => string;
}

const env = Handlebars.create();
for (const [name, fn] of Object.entries(HELPERS)) {
  // Helpers receive Handlebars' options hash last: it gives the template line; the helper never sees it.
  env.registerHelper(name, (...args: unknown[]) => {
    const options = args[args.length - 1] as HelperOptions;
    activeLine = options?.loc?.start?.line ?? activeLine;
    active?.spend(1, 0, activeLine);
    const out = fn(...args.slice(0, -1));
    if (typeof out === "string") active?.spend(0, out.length, activeLine);
    return out;
  });
}
// Block helpers count every iteration of their body, and the bytes each one produces, as it runs.
for (const block of ["each", "with", "if", "unless"]) {
  const original = env.helpers[block]! as (...a: unknown[]) => unknown;
  env.registerHelper(block, function (this: unknown, ...args: unknown[]) {
    const options = args[args.length - 1] as HelperOptions;
    const line = options?.loc?.start?.line;
    const body = options?.fn;
    if (!body) return original.apply(this, args);
    const counted = Object.assign(function (this: unknown, ...a: unknown[]) {
      activeLine = line ?? activeLine;
      active?.spend(1, 0, activeLine);
      const out = body.apply(this, a);
      active?.spend(0, out.length, line);
      return out;
    }, body);
    return original.apply(this, [...args.slice(0, -1), { ...options, fn: counted }]);
  });
}

const KNOWN_HELPERS = Object.fromEntries(HELPER_NAMES.map((n) => [n, true]));
const cache = new Map<string, Compiled>();

export interface TemplateFailure {
  kind: "syntax" | "unknown-parameter" | "unknown-helper" | "render" | "work" | "size";
  message: string;
  /** 1-based line within the template, when known. */
  line?: number;
  name?: string;
}

export function isTemplate(s: string): boolean {
  return s.includes("{{");
}

/**
 * Render one template string with a parameter context. With a budget, the work is counted as it
 * runs (loop iterations, helper calls and their output) and stops at the first limit passed.
 */
export function renderTemplate(
  source: string,
  ctx: Record<string, unknown>,
  budget?: TemplateBudget,
): { ok: true; value: string } | { ok: false; error: TemplateFailure } {
  if (!isTemplate(source)) return { ok: true, value: source };
  let fn = cache.get(source);
  const outer = active;
  const outerLine = activeLine;
  try {
    if (!fn) {
      fn = env.compile(source, { strict: true, noEscape: true, knownHelpers: KNOWN_HELPERS, knownHelpersOnly: true });
      cache.set(source, fn);
    }
    active = budget;
    activeLine = undefined;
    return { ok: true, value: fn(ctx) };
  } catch (err) {
    if (err instanceof LimitExceeded)
      return { ok: false, error: { kind: err.code === "RenderedTooLarge" ? "size" : "work", message: err.message, line: err.line } };
    if (err instanceof RangeError)
      return { ok: false, error: { kind: "size", message: `The template's output is too large (${err.message}).`, line: activeLine } };
    return { ok: false, error: classify(err as Error) };
  } finally {
    active = outer;
    activeLine = outerLine;
  }
}

function classify(err: Error): TemplateFailure {
  const msg = String(err?.message ?? err);
  const lineMatch = /line (\d+)/.exec(msg) ?? / - (\d+):\d+$/.exec(msg);
  const line = lineMatch ? Number(lineMatch[1]) : undefined;
  let m = /unknown helper (\S+)/i.exec(msg) ?? /Missing helper: "([^"]+)"/.exec(msg);
  if (m) return { kind: "unknown-helper", message: `Unknown helper "${m[1]}".`, line, name: m[1] };
  m = /"([^"]+)" not defined in/.exec(msg);
  if (m) return { kind: "unknown-parameter", message: `Unknown parameter "${m[1]}".`, line, name: m[1] };
  if (/Parse error|Expecting|doesn't match|Invalid path/i.test(msg)) {
    const first =
      msg
        .split("\n")
        .filter((l) => l.trim() !== "")
        .slice(-1)[0] ?? msg;
    return { kind: "syntax", message: `Template syntax error: ${first.trim()}`, line };
  }
  return { kind: "render", message: `Template failed to render: ${msg.split("\n")[0]}`, line };
}

export function slugify(s: string): string {
  return s
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/g, "");
}
