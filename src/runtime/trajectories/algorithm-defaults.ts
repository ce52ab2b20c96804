/**
 * Algorithm defaults and a minimal reader of a `kind: Algorithm` YAML document into a
 * ResolvedAlgorithm, for `reins trajectories --algorithm FILE`. Interim: the compiler will own
 * Algorithm parsing (schema, references, defaults); this reader mirrors the ResolvedAlgorithm
 * field names under `spec` (the same names and defaults as the compiler's Algorithm schema and
 * resolveAlgorithm; `type` defaults to GRPO here) and fills everything left out from DEFAULT_ALGORITHM.
 */
import { distance } from "fastest-levenshtein";
import { isMap, isScalar, isSeq, LineCounter, parseAllDocuments } from "yaml";
import type { Node, YAMLMap } from "yaml";
import type { Code } from "../../compiler/contract/codes.js";
import type { Diagnostic, Result } from "../../compiler/contract/diagnostics.js";
import { makeDiagnostic } from "../../compiler/contract/diagnostics.js";
import type { CallClass, ResolvedAlgorithm } from "../../compiler/contract/plan.js";
import { CALL_CLASSES } from "../records/read-calls.js";

export const DEFAULT_ALGORITHM: ResolvedAlgorithm = {
  type: "GRPO",
  groupSize: 8,
  advantage: { normalizeStd: true, dropZeroVariance: false, positiveOnly: false, gamma: 1, lambda: 1 },
  clip: { low: 0.2, high: 0.28 },
  klCoef: 0,
  entropyCoef: 0,
  learningRate: 1e-6,
  correction: { type: "TIS", level: "token", cap: 2 },
  filters: { dropDeadLeaves: true, dropClasses: ["compaction", "subagent", "title", "auxiliary"], maxBranches: 0 },
  lossAggregation: "token-mean",
  miniBatches: 1,
};

/** Default MIS bounds, the same for every level (as the compiler's resolveAlgorithm). */
export const DEFAULT_MIS_BOUNDS = { low: 0.5, high: 2 } as const;

type Spec =
  | { kind: "number"; min?: number; exclusiveMin?: boolean; max?: number; integer?: boolean }
  | { kind: "boolean" }
  | { kind: "enum"; values: readonly string[] }
  | { kind: "enumList"; values: readonly string[] }
  | { kind: "object"; fields: Record<string, Spec> };

const num = (min?: number, max?: number, integer = false, exclusiveMin = false): Spec => ({ kind: "number", min, max, integer, exclusiveMin });

const CORRECTION_FIELDS: Record<string, Spec> = {
  type: { kind: "enum", values: ["none", "TIS", "MIS"] },
  level: { kind: "enum", values: ["token", "sequence", "geometric"] },
  cap: num(0, undefined, false, true),
  low: num(0),
  high: num(0, undefined, false, true),
};

const SPEC_FIELDS: Record<string, Spec> = {
  type: { kind: "enum", values: ["GRPO", "PPO", "RLOO"] },
  groupSize: num(1, undefined, true),
  advantage: {
    kind: "object",
    fields: { normalizeStd: { kind: "boolean" }, dropZeroVariance: { kind: "boolean" }, positiveOnly: { kind: "boolean" }, gamma: num(0, 1), lambda: num(0, 1) },
  },
  clip: { kind: "object", fields: { low: num(0, 1), high: num(0) } },
  klCoef: num(0),
  entropyCoef: num(0),
  learningRate: num(0, undefined, false, true),
  correction: { kind: "object", fields: CORRECTION_FIELDS },
  filters: {
    kind: "object",
    fields: { dropDeadLeaves: { kind: "boolean" }, dropClasses: { kind: "enumList", values: CALL_CLASSES }, maxBranches: num(0, undefined, true) },
  },
  lossAggregation: { kind: "enum", values: ["token-mean", "sequence-mean", "sequence-sum"] },
  miniBatches: num(1, undefined, true),
};

const HINT_FIELDS = "Algorithm spec fields mirror ResolvedAlgorithm (see docs/trajectories.md).";

/** Read the first `kind: Algorithm` document of a YAML file into a ResolvedAlgorithm. */
export function parseAlgorithmYaml(text: string, file: string): Result<ResolvedAlgorithm> {
  const diagnostics: Diagnostic[] = [];
  const lineCounter = new LineCounter();
  const at = (node: Node | null | undefined) => {
    const lp = lineCounter.linePos(node?.range?.[0] ?? 0);
    return { file, line: lp.line, column: lp.col };
  };
  const error = (code: Code, node: Node | null | undefined, message: string, hint: string) =>
    diagnostics.push(makeDiagnostic(code, at(node), message, hint));
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false });
  const list = Array.isArray(docs) ? docs : [docs];
  for (const doc of list) {
    for (const e of doc.errors) {
      const lp = lineCounter.linePos(e.pos[0]);
      diagnostics.push(makeDiagnostic("AlgorithmYamlSyntax", { file, line: lp.line, column: lp.col }, e.message.split("\n")[0], "Fix the YAML syntax."));
    }
  }
  if (diagnostics.length > 0) return { value: DEFAULT_ALGORITHM, diagnostics };
  const doc = list.find((d) => isMap(d.contents) && (d.contents as YAMLMap).get("kind") === "Algorithm");
  if (!doc) {
    error("AlgorithmNotFound", null, "no document with `kind: Algorithm` in the file", "Add `apiVersion: reins/v1alpha1`, `kind: Algorithm` and a `spec`.");
    return { value: DEFAULT_ALGORITHM, diagnostics };
  }
  const spec = (doc.contents as YAMLMap).get("spec", true) as Node | undefined;
  if (spec === undefined || spec === null) return { value: structuredClone(DEFAULT_ALGORITHM), diagnostics };
  if (!isMap(spec)) {
    error("AlgorithmInvalidField", spec, "`spec` must be a mapping", HINT_FIELDS);
    return { value: DEFAULT_ALGORITHM, diagnostics };
  }
  const raw = readObject(spec, SPEC_FIELDS, "spec", error) as Record<string, unknown>;
  const value = structuredClone(DEFAULT_ALGORITHM) as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(raw)) {
    if (k === "correction") continue;
    value[k] = isPlainObject(v) ? { ...(value[k] as object), ...v } : v;
  }
  const algorithm = value as unknown as ResolvedAlgorithm;
  if (raw.correction) algorithm.correction = resolveCorrection(raw.correction as Record<string, unknown>, spec.get("correction", true) as Node, error);
  if (algorithm.clip.high < algorithm.clip.low) error("AlgorithmInvalidField", spec.get("clip", true) as Node, "clip.high is below clip.low", "Use clip.low <= clip.high.");
  return { value: algorithm, diagnostics };
}

type ErrorFn = (code: Code, node: Node | null | undefined, message: string, hint: string) => void;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function resolveCorrection(raw: Record<string, unknown>, node: Node, error: ErrorFn): ResolvedAlgorithm["correction"] {
  const type = (raw.type as string | undefined) ?? "TIS";
  if (type === "none") return { type: "none" };
  if (type === "TIS") {
    const level = (raw.level as string | undefined) ?? "token";
    if (level === "geometric") error("AlgorithmInvalidField", node, "TIS has levels token and sequence; geometric bounds belong to MIS", "Use `type: MIS, level: geometric`.");
    return { type: "TIS", level: level === "sequence" ? "sequence" : "token", cap: (raw.cap as number | undefined) ?? 2 };
  }
  const level = ((raw.level as string | undefined) ?? "token") as "token" | "sequence" | "geometric";
  const low = (raw.low as number | undefined) ?? DEFAULT_MIS_BOUNDS.low;
  const high = (raw.high as number | undefined) ?? DEFAULT_MIS_BOUNDS.high;
  if (high < low) error("AlgorithmInvalidField", node, "correction.high is below correction.low", "Use low <= high.");
  return { type: "MIS", level, low, high };
}

function readObject(map: YAMLMap, fields: Record<string, Spec>, path: string, error: ErrorFn): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of map.items) {
    const keyNode = pair.key as Node;
    const key = isScalar(keyNode) ? String(keyNode.value) : "";
    const spec = fields[key];
    if (!spec) {
      const names = Object.keys(fields);
      const best = names.map((n) => ({ n, d: distance(n.toLowerCase(), key.toLowerCase()) })).sort((a, b) => a.d - b.d)[0];
      const suggestion = best && best.d <= Math.max(2, Math.floor(key.length / 3)) ? `Did you mean \`${best.n}\`? ` : "";
      error("AlgorithmUnknownField", keyNode, `unknown field \`${path}.${key}\``, `${suggestion}Known fields: ${names.join(", ")}.`);
      continue;
    }
    const v = readValue(pair.value as Node, spec, `${path}.${key}`, error);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function readValue(node: Node, spec: Spec, path: string, error: ErrorFn): unknown {
  const bad = (expected: string) => {
    error("AlgorithmInvalidField", node, `\`${path}\` must be ${expected}`, HINT_FIELDS);
    return undefined;
  };
  if (spec.kind === "object") return isMap(node) ? readObject(node, spec.fields, path, error) : bad("a mapping");
  if (spec.kind === "enumList") {
    if (!isSeq(node)) return bad(`a list of ${spec.values.join(", ")}`);
    const out: CallClass[] = [];
    for (const item of node.items) {
      const v = isScalar(item) ? item.value : undefined;
      if (typeof v !== "string" || !spec.values.includes(v)) return bad(`a list of ${spec.values.join(", ")}`);
      out.push(v as CallClass);
    }
    return out;
  }
  const v = isScalar(node) ? node.value : undefined;
  if (spec.kind === "boolean") return typeof v === "boolean" ? v : bad("true or false");
  if (spec.kind === "enum") return typeof v === "string" && spec.values.includes(v) ? v : bad(`one of ${spec.values.join(", ")}`);
  if (typeof v !== "number" || !Number.isFinite(v)) return bad("a number");
  if (spec.integer && !Number.isInteger(v)) return bad("an integer");
  if (spec.min !== undefined && (spec.exclusiveMin ? v <= spec.min : v < spec.min)) return bad(`${spec.exclusiveMin ? ">" : ">="} ${spec.min}`);
  if (spec.max !== undefined && v > spec.max) return bad(`<= ${spec.max}`);
  return v;
}
