/**
 * Regular expressions over hostile text: compiled once, executed in a vm context with a deadline,
 * so a catastrophic pattern on crafted content gives a "timed out" result instead of a hang.
 */
import vm from "node:vm";

export const REGEX_TIMEOUT_MS = 1000;

export type CompiledRegex = { ok: true; re: RegExp } | { ok: false; error: string };

const cache = new Map<string, CompiledRegex>();

export function compileRegex(pattern: string, flags = ""): CompiledRegex {
  const key = `${flags}/${pattern}`;
  let c = cache.get(key);
  if (!c) {
    try {
      c = { ok: true, re: new RegExp(pattern, flags.replace(/[gy]/g, "")) };
    } catch (e) {
      c = { ok: false, error: (e as Error).message };
    }
    if (cache.size > 1000) cache.clear();
    cache.set(key, c);
  }
  return c;
}

export type RegexSearch = { kind: "match"; match: RegExpExecArray } | { kind: "none" } | { kind: "timeout" };

const context = vm.createContext({ re: null as RegExp | null, text: "" });
const script = new vm.Script("re.exec(text)");

/** Texts up to this size may skip the deadline when the pattern cannot backtrack badly. */
const SMALL_TEXT = 4096;

/**
 * Whether a pattern can take super-quadratic time: a quantified group (`(a+)+`, `(a|aa)*`), a
 * backreference, or more than one unbounded quantifier (`a*a*b` is cubic). With none of these the
 * worst case is quadratic in the text length, which is harmless on small texts.
 */
export function mayBacktrackBadly(pattern: string): boolean {
  if (/\\[1-9]|\\k</.test(pattern)) return true;
  let unbounded = 0;
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "\\") {
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") inClass = true;
    else if (c === ")" && /[*+?{]/.test(pattern[i + 1] ?? "")) return true;
    else if (c === "*" || c === "+") unbounded++;
    else if (c === "{" && /^\{\d+,\}/.test(pattern.slice(i))) unbounded++;
  }
  return unbounded > 1;
}

/** First match of `re` in `text`, or a timeout after `timeoutMs` (the deadline costs ~0.5 ms, so it is skipped when it cannot matter). */
export function searchRegex(re: RegExp, text: string, timeoutMs = REGEX_TIMEOUT_MS): RegexSearch {
  if (text.length <= SMALL_TEXT && !mayBacktrackBadly(re.source)) {
    const m = re.exec(text);
    return m ? { kind: "match", match: m } : { kind: "none" };
  }
  context.re = re;
  context.text = text;
  try {
    const m = script.runInContext(context, { timeout: timeoutMs }) as RegExpExecArray | null;
    return m ? { kind: "match", match: m } : { kind: "none" };
  } catch {
    return { kind: "timeout" };
  } finally {
    context.re = null;
    context.text = "";
  }
}
