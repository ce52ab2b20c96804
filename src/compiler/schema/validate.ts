// biome-ignore-all lint/suspicious/noExplicitAny: zod's internal definitions (_zod.def) are untyped
/**
 * Schema validation of parsed documents: zod issues → diagnostics with positions and did-you-mean.
 * The zod schemas are the single source of truth; the generated JSON Schemas say the same thing
 * (a test checks that editors and `reins validate` agree).
 */
import type { z } from "zod";
import { closest, distance } from "fastest-levenshtein";
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import { positionAt, type PathSegment, type SourceDocument } from "../source/yaml.js";
import { API_VERSION } from "./common.js";
import { KINDS, KIND_NAMES, isKind, type DocumentOf, type Kind } from "./kinds.js";
import { unsupportedField } from "./unsupported.js";

/**
 * A document that passed its kind's schema: `doc` is that schema's output (defaults applied by zod
 * where declared), typed by `kind` — narrow on `kind` (or name it: TypedDocument<"Model">) and
 * `doc.spec` is the kind's spec.
 */
export type TypedDocument<K extends Kind = Kind> = {
  [P in K]: { kind: P; name: string; source: SourceDocument; doc: DocumentOf<P> };
}[K];

/** Validate one parsed document against its kind's schema. */
export function validateDocument(src: SourceDocument): Result<TypedDocument | undefined> {
  const v = src.value;
  const diagnostics: Diagnostic[] = [];
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    diagnostics.push(
      makeDiagnostic("InvalidType", positionAt(src, []), "A spec document must be a mapping with apiVersion, kind, metadata and spec.", CODES.InvalidType),
    );
    return { value: undefined, diagnostics };
  }
  const obj = v as Record<string, unknown>;
  if (obj.apiVersion === undefined) {
    diagnostics.push(makeDiagnostic("MissingApiVersion", positionAt(src, []), "The document has no apiVersion.", CODES.MissingApiVersion));
  } else if (obj.apiVersion !== API_VERSION) {
    diagnostics.push(
      makeDiagnostic(
        "UnsupportedApiVersion",
        positionAt(src, ["apiVersion"]),
        `apiVersion ${JSON.stringify(obj.apiVersion)} is not supported.`,
        CODES.UnsupportedApiVersion,
      ),
    );
  }
  if (obj.kind === undefined) {
    diagnostics.push(makeDiagnostic("MissingKind", positionAt(src, []), "The document has no kind.", CODES.MissingKind));
    return { value: undefined, diagnostics };
  }
  if (!isKind(obj.kind)) {
    const guess = typeof obj.kind === "string" ? suggest(obj.kind, KIND_NAMES) : undefined;
    diagnostics.push(
      makeDiagnostic(
        "UnknownKind",
        positionAt(src, ["kind"]),
        `Unknown kind ${JSON.stringify(obj.kind)}.${guess ? ` Did you mean ${guess}?` : ""}`,
        `${CODES.UnknownKind} Kinds: ${KIND_NAMES.join(", ")}.`,
      ),
    );
    return { value: undefined, diagnostics };
  }
  if (diagnostics.length > 0) return { value: undefined, diagnostics };
  const kind = obj.kind;
  const schema = KINDS[kind].schema as z.ZodType;
  const parsed = schema.safeParse(v);
  if (!parsed.success) {
    diagnostics.push(...issuesToDiagnostics(src, schema, parsed.error.issues as unknown as Issue[]));
    return { value: undefined, diagnostics };
  }
  // The schema of `kind` parsed it: its output is that kind's document.
  const doc = parsed.data as DocumentOf<typeof kind>;
  return { value: { kind, name: doc.metadata.name, source: src, doc } as TypedDocument, diagnostics };
}

interface Issue {
  code: string;
  path: PathSegment[];
  message: string;
  keys?: string[];
  expected?: string;
  values?: unknown[];
  errors?: Issue[][];
  format?: string;
  origin?: string;
}

export function issuesToDiagnostics(src: SourceDocument, schema: z.ZodType, issues: Issue[], prefix: PathSegment[] = []): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
    out.push(...issueToDiagnostics(src, schema, issue, path));
  }
  return out;
}

function issueToDiagnostics(src: SourceDocument, schema: z.ZodType, issue: Issue, path: PathSegment[]): Diagnostic[] {
  const where = describePath(path);
  switch (issue.code) {
    case "unrecognized_keys": {
      const known = knownKeysAt(
        schema,
        path.filter((p) => typeof p === "string" || typeof p === "number"),
        valueAt(src.value, path),
      );
      const kind = (src.value as { kind?: unknown } | null)?.kind;
      return (issue.keys ?? []).map((key) => {
        const unsupported = unsupportedField(kind, path, key);
        if (unsupported) return makeDiagnostic(unsupported.code, positionAt(src, [...path, key], { key: true }), unsupported.message, unsupported.hint);
        const guess = suggest(key, known);
        return makeDiagnostic(
          "UnknownField",
          positionAt(src, [...path, key], { key: true }),
          `Unknown field "${key}"${where ? ` in ${where}` : ""}.${guess ? ` Did you mean "${guess}"?` : ""}`,
          known.length > 0 ? `${CODES.UnknownField} Known fields here: ${known.join(", ")}.` : CODES.UnknownField,
        );
      });
    }
    case "invalid_union":
      return unionToDiagnostics(src, schema, issue, path);
    case "invalid_type": {
      const actual = valueAt(src.value, path);
      if (actual === undefined) {
        const field = path[path.length - 1];
        return [
          makeDiagnostic(
            "MissingField",
            positionAt(src, path.slice(0, -1), { key: path.length > 1 }),
            `Required field "${String(field)}" is missing${path.length > 1 ? ` in ${describePath(path.slice(0, -1))}` : ""}.`,
            `${CODES.MissingField} Expected ${issue.expected ?? "a value"}.`,
          ),
        ];
      }
      // A family's template is checked rendered: a whole-value template ("{{count}}") keeps its parameter's type.
      const rendered = typeof actual === "string" && /^\s*\{\{[^{}]+\}\}\s*$/.test(actual);
      const message = rendered
        ? `${where || "The value"} should be ${article(issue.expected)}, but ${JSON.stringify(actual)} renders to the parameter's own type (a template that is one {{…}} keeps it).`
        : `${where || "The value"} should be ${article(issue.expected)}, not ${typeName(actual)}.`;
      const hint = rendered
        ? `${CODES.InvalidType} Declare the parameter with that type (e.g. type: string), or add text around the template.`
        : CODES.InvalidType;
      return [makeDiagnostic("InvalidType", positionAt(src, path), message, hint)];
    }
    case "invalid_value": {
      const allowed = (issue.values ?? []).map((x) => JSON.stringify(x));
      const actual = valueAt(src.value, path);
      const guess = typeof actual === "string" ? suggest(actual, (issue.values ?? []).map(String)) : undefined;
      const dialect = path[path.length - 1] === "dialect";
      return [
        makeDiagnostic(
          dialect ? "UnsupportedDialect" : "InvalidValue",
          positionAt(src, path),
          `${where || "The value"} is ${JSON.stringify(actual)}, which is not allowed.${guess ? ` Did you mean "${guess}"?` : ""}`,
          `${dialect ? CODES.UnsupportedDialect : CODES.InvalidValue} Allowed: ${allowed.join(", ")}.`,
        ),
      ];
    }
    default: {
      const isName = path[path.length - 1] === "name" && issue.code === "invalid_format";
      if (isName) {
        const actual = valueAt(src.value, path);
        return [makeDiagnostic("InvalidName", positionAt(src, path), `${where} ${JSON.stringify(actual)} is not a valid name.`, CODES.InvalidName)];
      }
      return [makeDiagnostic("InvalidValue", positionAt(src, path), `${where || "The value"}: ${lowerFirst(issue.message)}.`, CODES.InvalidValue)];
    }
  }
}

/** Pick the union branch that went furthest (fewest issues) and report its issues. */
function unionToDiagnostics(src: SourceDocument, schema: z.ZodType, issue: Issue, path: PathSegment[]): Diagnostic[] {
  const branches = issue.errors ?? [];
  const value = valueAt(src.value, path);
  // Single-key objects that match no branch's key: one "unknown field" with a suggestion.
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const keys = Object.keys(value);
    const known = knownKeysAt(schema, path, value);
    const unknown = keys.filter((k) => !known.includes(k));
    if (unknown.length > 0 && known.length > 0) {
      return unknown.map((key) => {
        const guess = suggest(key, known);
        return makeDiagnostic(
          "UnknownField",
          positionAt(src, [...path, key], { key: true }),
          `Unknown field "${key}"${describePath(path) ? ` in ${describePath(path)}` : ""}.${guess ? ` Did you mean "${guess}"?` : ""}`,
          `${CODES.UnknownField} Known fields here: ${known.join(", ")}.`,
        );
      });
    }
  }
  if (branches.length === 0) {
    return [
      makeDiagnostic("InvalidValue", positionAt(src, path), `${describePath(path) || "The value"} matches none of the allowed forms.`, CODES.InvalidValue),
    ];
  }
  const score = (b: Issue[]) => b.length * 100 - Math.max(0, ...b.map((i) => i.path.length));
  const best = [...branches].sort((a, b) => score(a) - score(b))[0]!;
  return best.flatMap((i) => issueToDiagnostics(src, schema, i, [...path, ...i.path]));
}

function valueAt(root: unknown, path: readonly PathSegment[]): unknown {
  let v = root;
  for (const p of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string | number, unknown>)[p as string];
  }
  return v;
}

/** Keys a zod schema accepts for the object at `path` (union branches merged). */
export function knownKeysAt(schema: z.ZodType, path: readonly PathSegment[], _value?: unknown): string[] {
  let nodes: any[] = [schema];
  for (const seg of path) {
    const next: any[] = [];
    for (const n of nodes.flatMap(unwrap)) {
      const def = n?._zod?.def;
      if (!def) continue;
      if (def.type === "object" && typeof seg === "string") {
        const child = def.shape?.[seg] ?? (def.catchall && def.catchall._zod?.def?.type !== "never" ? def.catchall : undefined);
        if (child) next.push(child);
      } else if (def.type === "array" && typeof seg === "number") next.push(def.element);
      else if (def.type === "record") next.push(def.valueType);
    }
    nodes = next;
  }
  const keys = new Set<string>();
  for (const n of nodes.flatMap(unwrap)) {
    const def = n?._zod?.def;
    if (def?.type === "object") for (const k of Object.keys(def.shape ?? {})) keys.add(k);
  }
  return [...keys];
}

function unwrap(n: any): any[] {
  const def = n?._zod?.def;
  if (!def) return [];
  if (def.type === "optional" || def.type === "nullable" || def.type === "default" || def.type === "prefault" || def.type === "readonly")
    return unwrap(def.innerType);
  if (def.type === "pipe") return unwrap(def.in);
  if (def.type === "union") return (def.options as any[]).flatMap(unwrap);
  if (def.type === "lazy") return unwrap(def.getter());
  return [n];
}

export function suggest(word: string, candidates: readonly string[]): string | undefined {
  if (candidates.length === 0) return undefined;
  const best = closest(word, candidates as string[]);
  const d = distance(word.toLowerCase(), best.toLowerCase());
  return d <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

export function describePath(path: readonly PathSegment[]): string {
  let s = "";
  for (const p of path) s += typeof p === "number" ? `[${p}]` : s ? `.${p}` : p;
  return s;
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a mapping";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  return `${typeof v} ${String(v)}`;
}

function article(expected?: string): string {
  if (!expected) return "another type";
  if (expected === "object") return "a mapping";
  if (expected === "array") return "a list";
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

function lowerFirst(s: string): string {
  const t = s.replace(/^Invalid input: /, "").replace(/\.$/, "");
  return t.charAt(0).toLowerCase() + t.slice(1);
}
