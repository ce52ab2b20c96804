/**
 * YAML with positions: multi-document parsing, alias-bomb and nesting guards,
 * and mapping value paths back to `file:line:column`.
 */
import { LineCounter, parseAllDocuments, isMap, isSeq, isScalar, isPair, visit, type Document, type Node, type Pair, type YAMLMap } from "yaml";
import { makeDiagnostic, type Diagnostic, type Result, type SourcePosition } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import type { SourceText } from "./files.js";
import type { ProjectRoot } from "./project.js";
import { interpolateDocument } from "./interpolate.js";
import { MAX_DOCUMENT_VALUES } from "../resolve/limits.js";

export const MAX_ALIAS_COUNT = 100;
export const MAX_DEPTH = 64;

export interface SourceDocument {
  file: string;
  absPath: string;
  /** 0-based index of the document in its file. */
  index: number;
  doc: Document.Parsed;
  lineCounter: LineCounter;
  /** Plain JS value of the document (after interpolation). */
  value: unknown;
  /** The whole file's text (for code frames and template line mapping). */
  text: string;
  /** The project the file belongs to (set by the loader): host paths it names resolve inside it. */
  roots?: readonly ProjectRoot[];
}

export type PathSegment = string | number;

/** Parse every document of a file. Bad documents yield diagnostics; good ones are kept. */
export function parseSource(src: SourceText, env: NodeJS.ProcessEnv): Result<SourceDocument[]> {
  const diagnostics: Diagnostic[] = [];
  const lineCounter = new LineCounter();
  const preDepth = flowDepth(src.text);
  if (preDepth > MAX_DEPTH * 4) {
    const d = makeDiagnostic(
      "TooDeep",
      { file: src.file, line: 1, column: 1 },
      `Brackets nest ${preDepth} levels deep; the limit is ${MAX_DEPTH}.`,
      CODES.TooDeep,
    );
    return { value: [], diagnostics: [d] };
  }
  let docs: Document.Parsed[];
  try {
    // Duplicate keys are found below in linear time (the parser's own check is quadratic in a map's size).
    docs = parseAllDocuments(src.text, { lineCounter, uniqueKeys: false, prettyErrors: false, strict: true }) as Document.Parsed[];
    if (!Array.isArray(docs)) docs = [docs as unknown as Document.Parsed];
  } catch (err) {
    const code = err instanceof RangeError ? "TooDeep" : "YamlSyntax";
    return {
      value: [],
      diagnostics: [makeDiagnostic(code, { file: src.file, line: 1, column: 1 }, `The file could not be parsed: ${(err as Error).message}.`, CODES[code])],
    };
  }
  const out: SourceDocument[] = [];
  docs.forEach((doc, index) => {
    const errs = doc.errors ?? [];
    for (const e of errs) {
      const pos = lineCounter.linePos(e.pos[0]);
      const dup = /map keys must be unique/i.test(e.message);
      const code = dup ? "DuplicateKey" : "YamlSyntax";
      diagnostics.push(makeDiagnostic(code, { file: src.file, line: pos.line, column: pos.col }, firstLine(e.message), CODES[code]));
    }
    const duplicates = errs.length > 0 ? [] : duplicateKeys(doc);
    for (const key of duplicates) {
      const pos = lineCounter.linePos(key.range?.[0] ?? 0);
      diagnostics.push(makeDiagnostic("DuplicateKey", { file: src.file, line: pos.line, column: pos.col }, "Map keys must be unique.", CODES.DuplicateKey));
    }
    if (errs.length > 0 || duplicates.length > 0) return;
    for (const w of doc.warnings ?? []) {
      const pos = lineCounter.linePos(w.pos[0]);
      diagnostics.push(makeDiagnostic("YamlSyntax", { file: src.file, line: pos.line, column: pos.col }, firstLine(w.message), CODES.YamlSyntax, "warning"));
    }
    if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)) {
      // A trailing `---` or comment-only document: ignore silently unless it is the only one.
      if (docs.length === 1) {
        const pos = lineCounter.linePos(doc.range?.[0] ?? 0);
        diagnostics.push(makeDiagnostic("EmptyDocument", { file: src.file, line: pos.line, column: pos.col }, "The document is empty.", CODES.EmptyDocument));
      }
      return;
    }
    const interp = interpolateDocument(doc, env, (node) => nodePosition(src.file, lineCounter, node));
    diagnostics.push(...interp.diagnostics);
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (err) {
      const bomb = /alias/i.test((err as Error).message);
      const pos = lineCounter.linePos(bomb ? lastAliasOffset(doc) : (doc.range?.[0] ?? 0));
      const code = bomb ? "AliasBomb" : err instanceof RangeError ? "TooDeep" : "YamlSyntax";
      diagnostics.push(makeDiagnostic(code, { file: src.file, line: pos.line, column: pos.col }, firstLine((err as Error).message), CODES[code]));
      return;
    }
    const { depth, values } = measureValue(value);
    if (values > MAX_DOCUMENT_VALUES) {
      // Aliases are shared objects in `value`; walking it counts them expanded, as later stages see them.
      const aliased = hasAlias(doc);
      const pos = lineCounter.linePos(aliased ? lastAliasOffset(doc) : (doc.range?.[0] ?? 0));
      const code = aliased ? "AliasBomb" : "DocumentTooLarge";
      const message = `The document ${aliased ? "expands (with its aliases) to" : "has"} more than ${MAX_DOCUMENT_VALUES.toLocaleString("en-US")} values; that is the limit per document.`;
      diagnostics.push(makeDiagnostic(code, { file: src.file, line: pos.line, column: pos.col }, message, CODES[code]));
      return;
    }
    if (depth > MAX_DEPTH) {
      const pos = lineCounter.linePos(doc.range?.[0] ?? 0);
      diagnostics.push(
        makeDiagnostic(
          "TooDeep",
          { file: src.file, line: pos.line, column: pos.col },
          `The document nests ${depth} levels deep; the limit is ${MAX_DEPTH}.`,
          CODES.TooDeep,
        ),
      );
      return;
    }
    out.push({ file: src.file, absPath: src.absPath, index, doc, lineCounter, value, text: src.text });
  });
  return { value: out, diagnostics };
}

/** Keys repeated in a map of the document (scalar keys with the same value), in one pass. */
function duplicateKeys(doc: Document.Parsed): Node[] {
  const out: Node[] = [];
  visit(doc, {
    Map(_k, map) {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        if (seen.has(pair.key.value)) out.push(pair.key);
        else seen.add(pair.key.value);
      }
    },
  });
  return out;
}

function lastAliasOffset(doc: Document.Parsed): number {
  let at = doc.range?.[0] ?? 0;
  visit(doc, {
    Alias(_k, node) {
      if (node.range) at = node.range[0];
    },
  });
  return at;
}

function firstLine(s: string): string {
  const line = s.split("\n")[0]!.trim();
  return line.endsWith(".") ? line : `${line}.`;
}

/** Maximum bracket nesting in flow style, a cheap guard before parsing. */
function flowDepth(text: string): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 91 || c === 123) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 93 || c === 125) {
      if (depth > 0) depth--;
    }
  }
  return max;
}

/** Depth and number of values (aliases counted expanded); stops early past either limit. */
function measureValue(root: unknown): { depth: number; values: number } {
  let max = 0;
  let values = 0;
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    values++;
    if (d > max) max = d;
    if (d > MAX_DEPTH + 1 || values > MAX_DOCUMENT_VALUES) return { depth: max, values };
    if (Array.isArray(v)) for (const x of v) stack.push([x, d + 1]);
    else if (v !== null && typeof v === "object") for (const x of Object.values(v)) stack.push([x, d + 1]);
  }
  return { depth: max, values };
}

function hasAlias(doc: Document.Parsed): boolean {
  let found = false;
  visit(doc, {
    Alias() {
      found = true;
      return visit.BREAK;
    },
  });
  return found;
}

const pairIndex = new WeakMap<YAMLMap, Map<string, Pair>>();

/** A map's pair by key, through an index built once per map (positions are looked up for every diagnostic). */
function pairOf(map: YAMLMap, key: string): Pair | undefined {
  let index = pairIndex.get(map);
  if (!index) {
    index = new Map();
    for (const p of map.items) if (isPair(p) && isScalar(p.key) && !index.has(String(p.key.value))) index.set(String(p.key.value), p as Pair);
    pairIndex.set(map, index);
  }
  return index.get(key);
}

export function nodePosition(file: string, lineCounter: LineCounter, node: Node | null | undefined): SourcePosition {
  const start = node?.range?.[0] ?? 0;
  const end = node?.range?.[1] ?? start;
  const a = lineCounter.linePos(start);
  const b = lineCounter.linePos(end);
  return { file, line: a.line, column: a.col, endLine: b.line, endColumn: b.col };
}

/**
 * Position of the value at `path` in a document. `key: true` points at the key of the last
 * segment instead of its value (for unknown fields). Falls back to the nearest existing ancestor.
 */
export function positionAt(src: SourceDocument, path: readonly PathSegment[], opts: { key?: boolean } = {}): SourcePosition {
  let node: unknown = src.doc.contents;
  let best: unknown = node;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i]!;
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = pairOf(node, String(seg));
      if (!pair) break;
      if (last && opts.key) {
        best = pair.key;
        break;
      }
      node = pair.value;
    } else if (isSeq(node) && typeof seg === "number") {
      node = node.items[seg];
    } else {
      break;
    }
    if (node === undefined || node === null) break;
    best = node;
  }
  return nodePosition(src.file, src.lineCounter, best as Node);
}
