/**
 * The Handlebars environment for task families: isolated (`Handlebars.create()`), strict
 * (unknown parameters are errors), `noEscape`, only our own helpers (`knownHelpersOnly`),
 * no prototype access. Parameter values are data: they are never rendered again, so a value
 * containing `{{…}}` stays literal (no template injection).
 */
import Handlebars from "handlebars";

type Compiled = (ctx: Record<string, unknown>) => string;

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
  pad: (v: unknown, width: unknown, ch: unknown) => String(v).padStart(Number(width), typeof ch === "string" ? ch : "0"),
  eq: (a: unknown, b: unknown) => a === b,
  ne: (a: unknown, b: unknown) => a !== b,
  lt: (a: unknown, b: unknown) => Number(a) < Number(b),
  gt: (a: unknown, b: unknown) => Number(a) > Number(b),
  and: (a: unknown, b: unknown) => Boolean(a) && Boolean(b),
  or: (a: unknown, b: unknown) => Boolean(a) || Boolean(b),
  not: (a: unknown) => !a,
  join: (list: unknown, sep: unknown) => (Array.isArray(list) ? list.join(typeof sep === "string" ? sep : ", ") : String(list)),
  default: (v: unknown, d: unknown) => (v === undefined || v === null || v === "" ? d : v),
  indent: (s: unknown, n: unknown) => String(s).split("\n").join(`\n${" ".repeat(Number(n))}`),
  repeat: (s: unknown, n: unknown) => String(s).repeat(Math.max(0, Math.min(10_000, Number(n)))),
  range: (a: unknown, b: unknown) => {
    const lo = Number(a);
    const hi = Number(b);
    const out: number[] = [];
    for (let i = lo; i <= hi && out.length < 100_000; i++) out.push(i);
    return out;
  },
  pick: (list: unknown, i: unknown) => (Array.isArray(list) && list.length > 0 ? list[Math.abs(Number(i)) % list.length] : undefined),
};

export const HELPER_NAMES = Object.keys(HELPERS);

const env = Handlebars.create();
for (const [name, fn] of Object.entries(HELPERS)) {
  // Helpers receive Handlebars' options hash last; drop it.
  env.registerHelper(name, (...args: unknown[]) => fn(...args.slice(0, -1)));
}

const KNOWN_HELPERS = Object.fromEntries(HELPER_NAMES.map((n) => [n, true]));
const cache = new Map<string, Compiled>();

export interface TemplateFailure {
  kind: "syntax" | "unknown-parameter" | "unknown-helper" | "render";
  message: string;
  /** 1-based line within the template, when known. */
  line?: number;
  name?: string;
}

export function isTemplate(s: string): boolean {
  return s.includes("{{");
}

/** Render one template string with a parameter context. */
export function renderTemplate(source: string, ctx: Record<string, unknown>): { ok: true; value: string } | { ok: false; error: TemplateFailure } {
  if (!isTemplate(source)) return { ok: true, value: source };
  let fn = cache.get(source);
  try {
    if (!fn) {
      fn = env.compile(source, { strict: true, noEscape: true, knownHelpers: KNOWN_HELPERS, knownHelpersOnly: true });
      cache.set(source, fn);
    }
    return { ok: true, value: fn(ctx) };
  } catch (err) {
    return { ok: false, error: classify(err as Error) };
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
    const first = msg.split("\n").filter((l) => l.trim() !== "").slice(-1)[0] ?? msg;
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
