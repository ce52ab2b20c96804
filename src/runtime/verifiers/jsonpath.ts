/** The JSONPath subset checks use: `$`, `.key`, `['key']`, `["key"]`, `[n]`, `[-n]`, `[*]`, `.*`. */

export type PathSegment = { kind: "key"; key: string } | { kind: "index"; index: number } | { kind: "wild" };

export interface ParsedPath {
  segments: PathSegment[];
  /** True when the path can match several values (contains a wildcard). */
  multi: boolean;
}

const TOKEN = /\.([A-Za-z_$][\w$-]*)|\.\*|\[(-?\d+)\]|\[\*\]|\['([^']*)'\]|\["([^"]*)"\]/y;

/** Parses a path; null when it is outside the subset. */
export function parseJsonPath(query: string): ParsedPath | null {
  if (!query.startsWith("$")) return null;
  const segments: PathSegment[] = [];
  let pos = 1;
  while (pos < query.length) {
    TOKEN.lastIndex = pos;
    const m = TOKEN.exec(query);
    if (!m) return null;
    pos = TOKEN.lastIndex;
    if (m[1] !== undefined) segments.push({ kind: "key", key: m[1] });
    else if (m[2] !== undefined) segments.push({ kind: "index", index: Number(m[2]) });
    else if (m[3] !== undefined) segments.push({ kind: "key", key: m[3] });
    else if (m[4] !== undefined) segments.push({ kind: "key", key: m[4] });
    else segments.push({ kind: "wild" });
  }
  return { segments, multi: segments.some((s) => s.kind === "wild") };
}

function step(value: unknown, seg: PathSegment): unknown[] {
  if (seg.kind === "wild") {
    if (Array.isArray(value)) return value;
    if (value !== null && typeof value === "object") return Object.values(value);
    return [];
  }
  if (seg.kind === "index") {
    if (!Array.isArray(value)) return [];
    const i = seg.index < 0 ? value.length + seg.index : seg.index;
    return i >= 0 && i < value.length ? [value[i]] : [];
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.hasOwn(value, seg.key)) {
    return [(value as Record<string, unknown>)[seg.key]];
  }
  return [];
}

/** All values the path selects, in document order. */
export function evaluateJsonPath(doc: unknown, path: ParsedPath): unknown[] {
  let current: unknown[] = [doc];
  for (const seg of path.segments) {
    const next: unknown[] = [];
    for (const v of current) next.push(...step(v, seg));
    current = next;
  }
  return current;
}
