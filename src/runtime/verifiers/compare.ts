/** Value comparison for checks: deep equality, numbers within a tolerance, readable renderings. */

export const DEFAULT_TOLERANCE = 1e-9;

export interface CompareOptions {
  tolerance?: number;
  ignoreCase?: boolean;
}

export function numbersClose(a: number, b: number, tolerance = DEFAULT_TOLERANCE): boolean {
  return Math.abs(a - b) <= tolerance + 1e-12 * Math.max(Math.abs(a), Math.abs(b));
}

/** Deep equality; numbers compare within `tolerance`, strings optionally case-insensitively. */
export function valuesEqual(actual: unknown, expected: unknown, opts: CompareOptions = {}): boolean {
  if (typeof expected === "number" && typeof actual === "number") return numbersClose(actual, expected, opts.tolerance);
  // Templates render every value to a string: an expected "42" or "true" matches the number or boolean.
  if (typeof expected === "string" && typeof actual === "number") {
    const n = toNumber(expected);
    return n !== null && numbersClose(actual, n, opts.tolerance);
  }
  if (typeof expected === "string" && typeof actual === "boolean") return expected.trim() === String(actual);
  if (typeof expected === "string" && typeof actual === "string") {
    return opts.ignoreCase ? actual.toLowerCase() === expected.toLowerCase() : actual === expected;
  }
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => valuesEqual(actual[i], e, opts));
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return false;
    const ek = Object.keys(expected);
    const ak = Object.keys(actual);
    return (
      ek.length === ak.length &&
      ek.every((k) => Object.hasOwn(actual, k) && valuesEqual((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k], opts))
    );
  }
  return actual === expected;
}

/** A number from a number or a numeric string ("1,234.5" and "12%" are not numbers here). */
export function toNumber(v: unknown): number | null {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "string") {
    const t = v.trim();
    if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t)) return Number(t);
  }
  return null;
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return "a string";
  if (typeof v === "number") return "a number";
  return `a ${typeof v}`;
}

/** Short JSON rendering for reasons (at most `max` characters). */
export function formatValue(v: unknown, max = 80): string {
  let s: string;
  try {
    s = v === undefined ? "nothing" : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** "found 41 (expected 42)" with a hint about type mismatches ("the string \"42\"", etc.). */
export function describeMismatch(actual: unknown, expected: unknown): string {
  // An expected value rendered from a template ("42", "true") is shown as what it stands for.
  if (typeof expected === "string" && typeof actual === "number" && toNumber(expected) !== null) expected = toNumber(expected);
  if (typeof expected === "string" && typeof actual === "boolean" && /^(true|false)$/.test(expected.trim())) expected = expected.trim() === "true";
  const sameKind = typeName(actual) === typeName(expected);
  if (sameKind) return `found ${formatValue(actual)}, expected ${formatValue(expected)}`;
  return `found ${typeName(actual)} ${formatValue(actual)}, expected ${typeName(expected)} ${formatValue(expected)}`;
}

/** Canonical JSON (sorted keys) for order-insensitive comparisons. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

function childPath(path: string, key: string | number): string {
  return typeof key === "number" ? `${path}[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** Where two values first differ ("$.rows[2].due: found …, expected …"), or null when equal. */
export function firstDifference(actual: unknown, expected: unknown, opts: CompareOptions & { ignoreOrder?: boolean } = {}, path = "$"): string | null {
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (opts.ignoreOrder) {
      const a = actual.map(canonical).sort();
      const e = expected.map(canonical).sort();
      if (a.length !== e.length) return `${path} has ${a.length} items, expected ${e.length}`;
      const missing = expected.find((x) => !actual.some((y) => valuesEqual(y, x, opts)));
      return missing === undefined ? null : `${path} lacks ${formatValue(missing)}`;
    }
    for (let i = 0; i < Math.min(actual.length, expected.length); i++) {
      const d = firstDifference(actual[i], expected[i], opts, childPath(path, i));
      if (d) return d;
    }
    return actual.length === expected.length ? null : `${path} has ${actual.length} items, expected ${expected.length}`;
  }
  if (
    expected !== null &&
    typeof expected === "object" &&
    !Array.isArray(expected) &&
    actual !== null &&
    typeof actual === "object" &&
    !Array.isArray(actual)
  ) {
    for (const k of Object.keys(expected)) {
      if (!Object.hasOwn(actual, k)) return `${childPath(path, k)} is missing`;
      const d = firstDifference((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k], opts, childPath(path, k));
      if (d) return d;
    }
    const extra = Object.keys(actual).find((k) => !Object.hasOwn(expected, k));
    return extra === undefined ? null : `${childPath(path, extra)} is not expected`;
  }
  return valuesEqual(actual, expected, opts) ? null : `${path}: ${describeMismatch(actual, expected)}`;
}

/** Share of the expected items (array elements or object keys) that match; 0/1 for scalars. */
export function matchFraction(actual: unknown, expected: unknown, opts: CompareOptions & { ignoreOrder?: boolean } = {}): number {
  if (Array.isArray(expected) && Array.isArray(actual)) {
    const denom = Math.max(expected.length, actual.length);
    if (denom === 0) return 1;
    if (opts.ignoreOrder) {
      const pool = [...actual];
      let hits = 0;
      for (const e of expected) {
        const i = pool.findIndex((a) => firstDifference(a, e, opts) === null);
        if (i >= 0) {
          hits++;
          pool.splice(i, 1);
        }
      }
      return hits / denom;
    }
    let hits = 0;
    for (let i = 0; i < Math.min(actual.length, expected.length); i++) if (firstDifference(actual[i], expected[i], opts) === null) hits++;
    return hits / denom;
  }
  if (
    expected !== null &&
    typeof expected === "object" &&
    !Array.isArray(expected) &&
    actual !== null &&
    typeof actual === "object" &&
    !Array.isArray(actual)
  ) {
    const keys = new Set([...Object.keys(expected), ...Object.keys(actual)]);
    if (keys.size === 0) return 1;
    let hits = 0;
    for (const k of Object.keys(expected)) {
      if (Object.hasOwn(actual, k) && firstDifference((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k], opts) === null) hits++;
    }
    return hits / keys.size;
  }
  return firstDifference(actual, expected, opts) === null ? 1 : 0;
}
