/** Text checks: fileEquals, fileContains, fileNotContains, fileMatches, lineCount. */
import { compileRegex, searchRegex } from "../safe-regex.js";
import { checkBounds } from "./file-checks.js";
import { checkError, fail, partial, pass, str, type CheckDefinition } from "./context.js";

function normalizeText(s: string, trim: boolean, ignoreCase: boolean): string {
  let t = s.replace(/\r\n/g, "\n");
  if (trim) t = t.trim();
  return ignoreCase ? t.toLowerCase() : t;
}

function quote(s: string, max = 60): string {
  const j = JSON.stringify(s);
  return j.length > max ? `${j.slice(0, max - 2)}…"` : j;
}

/** "line 3: found "x", expected "y"" for the first differing line. */
function firstDifference(actual: string, expected: string): string {
  const a = actual.split("\n");
  const e = expected.split("\n");
  for (let i = 0; i < Math.max(a.length, e.length); i++) {
    if (a[i] !== e[i]) {
      if (a[i] === undefined) return `it ends at line ${i}, expected ${e.length} lines`;
      if (e[i] === undefined) return `it has ${a.length} lines, expected ${e.length}`;
      if (a[i].length <= 50 && e[i].length <= 50) return `line ${i + 1} is ${quote(a[i])}, expected ${quote(e[i])}`;
      // Long lines: show where they part.
      let col = 0;
      while (col < a[i].length && a[i][col] === e[i][col]) col++;
      const from = Math.max(0, col - 15);
      const cut = (s: string) => `${from > 0 ? "…" : ""}${s.slice(from, col + 25)}${s.length > col + 25 ? "…" : ""}`;
      return `line ${i + 1} differs at column ${col + 1}: ${JSON.stringify(cut(a[i]))}, expected ${JSON.stringify(cut(e[i]))}`;
    }
  }
  return "they differ";
}

function texts(v: unknown): string[] {
  return Array.isArray(v) ? (v as string[]) : [v as string];
}

export const textChecks: CheckDefinition[] = [
  {
    type: "fileEquals",
    label: (c) => `fileEquals ${str(c, "path")}`,
    async evaluate(c, ctx) {
      const path = str(c, "path");
      const actual = await ctx.readText(path);
      if (!actual.ok) return fail(actual.reason);
      let expected: string;
      if (c.hiddenFile !== undefined) {
        const h = await ctx.readText(str(c, "hiddenFile"), "hidden");
        if (!h.ok) return checkError("HiddenFileUnavailable", h.reason);
        expected = h.value;
      } else expected = str(c, "content");
      const trim = c.trim !== false;
      const ic = c.ignoreCase === true;
      const a = normalizeText(actual.value, trim, ic);
      const e = normalizeText(expected, trim, ic);
      if (a === e) return pass(`${path} has the expected content.`);
      return fail(`${path} differs from the expected content: ${firstDifference(a, e)}.`);
    },
  },
  {
    type: "fileContains",
    label: (c) => `fileContains ${str(c, "path")}`,
    async evaluate(c, ctx) {
      const path = str(c, "path");
      const t = await ctx.readText(path);
      if (!t.ok) return fail(t.reason);
      const wanted = texts(c.text);
      const present = containedIn(t.value, wanted, c.ignoreCase === true);
      const missing = wanted.filter((w) => !present.includes(w));
      return partial(
        wanted.length - missing.length,
        wanted.length,
        [`${path} does not contain ${missing.map((m) => quote(m)).join(", ")}.`],
        `${path} contains ${wanted.length === 1 ? quote(wanted[0]) : `all ${wanted.length} expected texts`}.`,
      );
    },
  },
  {
    type: "fileNotContains",
    label: (c) => `fileNotContains ${str(c, "path")}`,
    async evaluate(c, ctx) {
      const path = str(c, "path");
      const t = await ctx.readText(path);
      if (!t.ok) return fail(t.reason);
      const found = containedIn(t.value, texts(c.text), c.ignoreCase === true);
      if (found.length === 0) return pass(`${path} contains none of the forbidden texts.`);
      return fail(`${path} contains ${found.map((m) => quote(m)).join(", ")}, which it should not.`);
    },
  },
  {
    type: "fileMatches",
    label: (c) => `fileMatches ${str(c, "path")}`,
    async evaluate(c, ctx) {
      const path = str(c, "path");
      const re = compileRegex(str(c, "pattern"), (c.flags as string | undefined) ?? "");
      if (!re.ok) return checkError("InvalidPattern", `the pattern /${str(c, "pattern")}/ does not compile: ${re.error}`);
      const t = await ctx.readText(path);
      if (!t.ok) return fail(t.reason);
      const m = searchRegex(re.re, t.value);
      if (m.kind === "timeout") return fail(`matching /${str(c, "pattern")}/ against ${path} took too long; the file was not accepted.`);
      if (m.kind === "none") return fail(`${path} does not match /${str(c, "pattern")}/.`);
      return pass(`${path} matches /${str(c, "pattern")}/ (${quote(m.match[0])}).`);
    },
  },
  {
    type: "lineCount",
    label: (c) => `lineCount ${str(c, "path")}`,
    async evaluate(c, ctx) {
      const path = str(c, "path");
      const t = await ctx.readText(path);
      if (!t.ok) return fail(t.reason);
      let lines = t.value.length === 0 ? [] : t.value.replace(/\r\n/g, "\n").replace(/\n$/, "").split("\n");
      if (c.skipEmpty === true) lines = lines.filter((l) => l.trim() !== "");
      const b = checkBounds(c, lines.length, `the number of ${c.skipEmpty === true ? "non-blank " : ""}lines in ${path}`);
      return b.ok ? pass(b.reason) : fail(b.reason);
    },
  },
];

/** The texts `hay` contains, optionally ignoring case. */
function containedIn(hay: string, wanted: readonly string[], ignoreCase: boolean): string[] {
  const h = ignoreCase ? hay.toLowerCase() : hay;
  return wanted.filter((w) => h.includes(ignoreCase ? w.toLowerCase() : w));
}
