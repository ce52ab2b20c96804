/**
 * The resolved world: every document of every kind resolved (defaults applied, families
 * expanded, references between tasks and verifiers checked), indexed by name.
 * User documents shadow the shipped library; duplicates among user documents are errors.
 */
import { knobDeclarationProblems } from "./harness-knobs.js";
import { instructionArgProblems } from "./harness-argv.js";
import { checkPythonAt, type PythonEnv } from "./python-path.js";
import type { Entry } from "./entry.js";
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import type { ResolvedAlgorithm, ResolvedHarness, ResolvedModel, ResolvedSandbox, ResolvedTask, ResolvedTrainer, ResolvedVerifier } from "../contract/plan.js";
import type { Kind } from "../schema/kinds.js";
import type { TypedDocument } from "../schema/validate.js";
import { positionAt } from "../source/yaml.js";
import { resolveAlgorithm, resolveHarness, resolveModel, resolveSandbox, resolveTrainer, checkTrainer } from "./defaults.js";
import { resolveMcpServers } from "./mcp-servers.js";
import { expandFamily, newExpansionBudget } from "./families.js";
import { mountProblems } from "./host-paths.js";
import { checkJudgeReferences } from "./judges.js";
import { resolveTask } from "./tasks.js";
import { resolveVerifierSpec } from "./verifier.js";
import { verifierDiagnostics } from "./verifier-problems.js";

export type { Entry } from "./entry.js";

export interface World {
  tasks: Map<string, Entry<ResolvedTask>>;
  /** family name → names of its tasks, in expansion order. */
  families: Map<string, string[]>;
  harnesses: Map<string, Entry<ResolvedHarness>>;
  models: Map<string, Entry<ResolvedModel>>;
  algorithms: Map<string, Entry<ResolvedAlgorithm>>;
  sandboxes: Map<string, Entry<ResolvedSandbox>>;
  trainers: Map<string, Entry<ResolvedTrainer>>;
  verifiers: Map<string, Entry<ResolvedVerifier>>;
  experiments: TypedDocument<"Experiment">[];
  evaluations: TypedDocument<"Evaluation">[];
  /** Synthesis documents (read by `reins synth`, never planned). */
  syntheses: TypedDocument<"Synthesis">[];
}

/** `env`: where the allow-list of interpreters a spec's `python` may name is read (python-path.ts). */
export function resolveWorld(documents: readonly TypedDocument[], builtins: readonly TypedDocument[] = [], env: PythonEnv = {}): Result<World> {
  const diagnostics: Diagnostic[] = [];
  const byKind = indexByKind(documents, builtins, diagnostics);
  const docsOf = <K extends Kind>(k: K) => [...(byKind.get(k)?.values() ?? [])] as TypedDocument<K>[];

  const verifiers = new Map<string, Entry<ResolvedVerifier>>();
  for (const doc of docsOf("Verifier")) {
    const v = resolveVerifierSpec(doc.doc.spec, doc.name);
    diagnostics.push(...verifierDiagnostics(v, (p) => positionAt(doc.source, ["spec", ...p])));
    verifiers.set(doc.name, { value: v, doc });
  }
  const verifierValues = new Map([...verifiers].map(([k, e]) => [k, e.value]));

  const tasks = new Map<string, Entry<ResolvedTask>>();
  const families = new Map<string, string[]>();
  for (const doc of docsOf("Task")) {
    const res = resolveTask(doc.doc.spec, {
      name: doc.name,
      labels: doc.doc.metadata.labels ?? {},
      annotations: doc.doc.metadata.annotations ?? {},
      specFile: doc.source.absPath,
      roots: doc.source.roots,
      positionOf: (p) => positionAt(doc.source, ["spec", ...p]),
      verifiers: verifierValues,
    });
    diagnostics.push(...res.diagnostics);
    if (res.value) tasks.set(doc.name, { value: res.value, doc });
  }
  const budget = newExpansionBudget(tasks.size);
  for (const doc of docsOf("TaskFamily")) {
    const res = expandFamily(doc, verifierValues, budget);
    diagnostics.push(...res.diagnostics);
    const names: string[] = [];
    for (const t of res.value) {
      const prev = tasks.get(t.name);
      if (prev) {
        diagnostics.push(
          makeDiagnostic(
            "DuplicateName",
            positionAt(doc.source, ["metadata", "name"]),
            `Family "${doc.name}" renders task "${t.name}", which already exists.`,
            CODES.DuplicateName,
            "error",
            [`first defined at ${prev.doc.source.file}:${positionAt(prev.doc.source, ["metadata", "name"]).line}`],
          ),
        );
        continue;
      }
      tasks.set(t.name, { value: t, doc });
      names.push(t.name);
    }
    families.set(doc.name, names);
  }

  const harnesses = new Map<string, Entry<ResolvedHarness>>();
  for (const doc of docsOf("Harness")) {
    for (const p of mountProblems(doc.doc.spec, doc.source.absPath, doc.source.roots))
      diagnostics.push(makeDiagnostic(p.code, positionAt(doc.source, ["spec", ...p.path]), p.message, CODES[p.code]));
    for (const p of knobDeclarationProblems(doc.doc.spec))
      diagnostics.push(makeDiagnostic(p.code, positionAt(doc.source, ["spec", ...p.path]), p.message, p.hint));
    for (const p of instructionArgProblems(doc.doc.spec))
      diagnostics.push(makeDiagnostic(p.code, positionAt(doc.source, ["spec", ...p.path]), p.message, CODES[p.code], "warning"));
    const harness = resolveHarness(doc.name, doc.doc.spec, doc.source.absPath);
    const mcp = resolveMcpServers(doc.doc.spec.mcpServers, {
      specFile: doc.source.absPath,
      roots: doc.source.roots,
      positionOf: (p) => positionAt(doc.source, ["spec", "mcpServers", ...p]),
    });
    diagnostics.push(...mcp.diagnostics);
    if (mcp.value.length > 0) harness.mcpServers = mcp.value;
    harnesses.set(doc.name, { value: harness, doc });
  }
  const models = new Map<string, Entry<ResolvedModel>>();
  for (const doc of docsOf("Model")) {
    const { model, problems } = resolveModel(doc.name, doc.doc.spec, doc.source.absPath, doc.source.roots);
    for (const p of problems) diagnostics.push(makeDiagnostic(p.code, positionAt(doc.source, ["spec", ...p.path]), p.message, p.hint ?? CODES[p.code]));
    diagnostics.push(
      ...checkPythonAt(doc, ["spec", "engine", "serve", "python"], env, (python) => {
        if (model.engine.type === "vllm" && model.engine.serve) model.engine.serve.python = python;
      }),
    );
    models.set(doc.name, { value: model, doc });
  }
  const algorithms = new Map<string, Entry<ResolvedAlgorithm>>();
  for (const doc of docsOf("Algorithm")) {
    const a = resolveAlgorithm(doc.doc.spec);
    diagnostics.push(...checkAlgorithm(a, doc, ["spec"]));
    algorithms.set(doc.name, { value: a, doc });
  }
  const sandboxes = new Map<string, Entry<ResolvedSandbox>>();
  for (const doc of docsOf("Sandbox")) sandboxes.set(doc.name, { value: resolveSandbox(doc.doc.spec), doc });
  const trainers = new Map<string, Entry<ResolvedTrainer>>();
  for (const doc of docsOf("Trainer")) {
    diagnostics.push(...checkTrainer(doc.doc.spec, (...p) => positionAt(doc.source, ["spec", ...p])));
    const trainer = resolveTrainer(doc.doc.spec);
    diagnostics.push(...checkPythonAt(doc, ["spec", "python"], env, (python) => (trainer.python = python)));
    trainers.set(doc.name, { value: trainer, doc });
  }
  diagnostics.push(...checkJudgeReferences({ verifiers, tasks, models }));

  return {
    value: {
      tasks,
      families,
      harnesses,
      models,
      algorithms,
      sandboxes,
      trainers,
      verifiers,
      experiments: docsOf("Experiment"),
      evaluations: docsOf("Evaluation"),
      syntheses: docsOf("Synthesis"),
    },
    diagnostics,
  };
}

/** Semantic checks on an algorithm (schema-valid but meaningless settings). */
export function checkAlgorithm(a: ResolvedAlgorithm, doc: TypedDocument, at: (string | number)[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  if ((a.type === "GRPO" || a.type === "RLOO") && a.groupSize < 2) {
    out.push(
      makeDiagnostic(
        "GroupSizeTooSmall",
        positionAt(doc.source, [...at, "groupSize"]),
        `${a.type} needs at least 2 rollouts per group; groupSize is ${a.groupSize}.`,
        CODES.GroupSizeTooSmall,
      ),
    );
  }
  if (!(a.learningRate > 0) || !Number.isFinite(a.learningRate)) {
    out.push(
      makeDiagnostic(
        "InvalidValue",
        positionAt(doc.source, [...at, "learningRate"]),
        `learningRate must be a positive number, not ${a.learningRate}.`,
        "Use e.g. 1e-6.",
      ),
    );
  }
  if (a.type === "PPO" && a.advantage.dropZeroVariance) {
    out.push(
      makeDiagnostic(
        "InvalidValue",
        positionAt(doc.source, [...at, "advantage", "dropZeroVariance"]),
        "PPO has no groups to drop: its critic learns from every rollout, equal rewards included.",
        "Remove advantage.dropZeroVariance, or use GRPO/RLOO.",
      ),
    );
  }
  if (a.type !== "PPO" && a.valueCoef !== undefined) {
    out.push(
      makeDiagnostic(
        "InvalidValue",
        positionAt(doc.source, [...at, "valueCoef"]),
        `valueCoef weighs PPO's critic loss; ${a.type} has no critic.`,
        "Remove valueCoef, or use type: PPO.",
      ),
    );
  }
  const written = specAt(doc.doc, [...at, "advantage"]);
  for (const field of ["gamma", "lambda"] as const) {
    if (a.type !== "PPO" && written?.[field] !== undefined) {
      out.push(
        makeDiagnostic(
          "InvalidValue",
          positionAt(doc.source, [...at, "advantage", field]),
          `advantage.${field} is a GAE setting of PPO's critic; ${a.type} gives every token of a rollout its group-normalized reward.`,
          `Remove advantage.${field}, or use type: PPO.`,
        ),
      );
    }
  }
  if (a.correction.type === "MIS" && a.correction.low >= a.correction.high) {
    out.push(
      makeDiagnostic(
        "InvalidValue",
        positionAt(doc.source, [...at, "correction"]),
        `MIS bounds are empty: low ${a.correction.low} ≥ high ${a.correction.high}.`,
        "Make low smaller than high.",
      ),
    );
  }
  return out;
}

/** The object the user wrote at `path` (undefined when absent or not an object). */
function specAt(value: unknown, path: readonly (string | number)[]): Record<string, unknown> | undefined {
  let v: unknown = value;
  for (const k of path) v = typeof v === "object" && v !== null ? (v as Record<string | number, unknown>)[k] : undefined;
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function indexByKind(
  documents: readonly TypedDocument[],
  builtins: readonly TypedDocument[],
  diagnostics: Diagnostic[],
): Map<Kind, Map<string, TypedDocument>> {
  const byKind = new Map<Kind, Map<string, TypedDocument>>();
  const get = (k: Kind) => {
    let m = byKind.get(k);
    if (!m) byKind.set(k, (m = new Map()));
    return m;
  };
  for (const d of builtins) get(d.kind).set(d.name, d);
  const user = new Map<string, TypedDocument>();
  for (const d of documents) {
    const key = `${d.kind}/${d.name}`;
    const prev = user.get(key);
    if (prev) {
      const p = positionAt(prev.source, ["metadata", "name"]);
      diagnostics.push(
        makeDiagnostic("DuplicateName", positionAt(d.source, ["metadata", "name"]), `${d.kind} "${d.name}" is defined twice.`, CODES.DuplicateName, "error", [
          `first defined at ${p.file}:${p.line}:${p.column}`,
        ]),
      );
      continue;
    }
    user.set(key, d);
    get(d.kind).set(d.name, d);
  }
  return byKind;
}
