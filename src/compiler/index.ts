/**
 * The compiler's public API: load → validate → resolve → plan, plus the single-document readers
 * (an Algorithm file, a proxy's Model file). Every function returns `{value, diagnostics}`; nothing
 * here prints, reads argv, or touches the runtime. Every function takes `{cwd, env}`: relative
 * paths are resolved from the caller's cwd (recorded as Plan.root) and host paths in the plan come
 * out absolute, resolved once here; when a caller gives none, the process's cwd and environment.
 * The runtime imports only this file and src/compiler/contract/.
 */
import { hasErrors, sortDiagnostics, makeDiagnostic, type Diagnostic, type Result } from "./contract/diagnostics.js";
import type { LoadOptions } from "./load.js";
import { loadAndResolve, settle, type Loaded } from "./load-world.js";
import { buildPlan } from "./plan/build.js";
import type { Plan, ResolvedTask } from "./contract/plan.js";
import { positionAt } from "./source/yaml.js";
import { CODES } from "./contract/codes.js";
import type { ResolvedSynthesis } from "./contract/synthesis.js";
import { resolveSynthesis } from "./resolve/synthesis.js";

export type { Diagnostic, Result, SourcePosition, Severity } from "./contract/diagnostics.js";
export { DiagnosticsError, diagnosticOf } from "./contract/diagnostics.js";
export { hasErrors, makeDiagnostic, sortDiagnostics } from "./contract/diagnostics.js";
export type * from "./contract/plan.js";
export type * from "./contract/synthesis.js";
export { CALL_CLASSES, DIALECTS, DEFAULT_BAD_STEP_POLICY } from "./contract/plan.js";
export { CODES, type Code, type DiagnosticCode } from "./contract/codes.js";
export { ReinsError, isReinsError, makeProblem, failWith, succeed, type Outcome, type Problem } from "./contract/problem.js";
export { diffPlans, type PlanDiff } from "./plan/diff.js";
export { hashPlan } from "./plan/hash.js";
export { planForSeed, relocatedPolicy } from "./plan/seeds.js";
export { generateJsonSchemas, serializeSchema } from "./schema/json-schema.js";
export { NAME_PATTERN } from "./schema/common.js";
export { loadProxyConfig, type ProxyConfig } from "./proxy-config.js";
export { canonicalJson, digestOf } from "./contract/hash.js";
export { loadAlgorithm, defaultAlgorithm } from "./algorithm-file.js";
export { normalizeCheck } from "./resolve/verifier.js";
export { loadAndResolve, type Loaded } from "./load-world.js";
export type { LoadOptions } from "./load.js";
export { checkModelFile, readModelFile, MODEL_FILE_LIMITS, MODEL_FILE_TOO_LARGE_HINT, type ModelFileKind } from "./source/model-files.js";

export interface CompileOptions extends LoadOptions {
  /** Name of the Experiment/Evaluation to plan when several are given. */
  target?: string;
  /** An Experiment's seeds in place of its spec's `seed`/`seeds` (distinct; `reins run --seeds`): a multi-seed plan. */
  seeds?: readonly number[];
}

/** Validate: load, resolve, and plan every Experiment/Evaluation found (to surface their problems). */
export function validateSpecs(paths: readonly string[], opts: LoadOptions = {}): Result<Loaded> {
  const settled = settle(opts);
  const r = loadAndResolve(paths, settled);
  const diagnostics = [...r.diagnostics];
  const rollouts = { count: 0 };
  for (const target of [...r.value.world.experiments, ...r.value.world.evaluations]) {
    diagnostics.push(...buildPlan(r.value.world, target, { cwd: settled.cwd, env: settled.env, rollouts }).diagnostics);
  }
  for (const synthesis of r.value.world.syntheses) diagnostics.push(...resolveSynthesis(synthesis, r.value.world.models).diagnostics);
  return { value: r.value, diagnostics: sortDiagnostics(dedupe(diagnostics)) };
}

export function compilePlan(paths: readonly string[], opts: CompileOptions = {}): Result<Plan | undefined> {
  const settled = settle(opts);
  const r = loadAndResolve(paths, settled);
  const diagnostics: Diagnostic[] = [...r.diagnostics];
  const targets = [...r.value.world.experiments, ...r.value.world.evaluations];
  const chosen = opts.target ? targets.filter((t) => t.name === opts.target) : targets;
  const file = paths[0] ?? ".";
  if (chosen.length === 0) {
    diagnostics.push(
      makeDiagnostic(
        opts.target ? "UnknownReference" : "NoPlanTarget",
        { file, line: 1, column: 1 },
        opts.target ? `No Experiment or Evaluation named "${opts.target}".` : "There is no Experiment or Evaluation to plan.",
        opts.target ? `Known: ${targets.map((t) => t.name).join(", ") || "none"}.` : "Add an Experiment or Evaluation document, or pass the file that has one.",
      ),
    );
    return { value: undefined, diagnostics: sortDiagnostics(diagnostics) };
  }
  if (chosen.length > 1) {
    const second = chosen[1]!;
    diagnostics.push(
      makeDiagnostic(
        "AmbiguousPlanTarget",
        positionAt(second.source, ["metadata", "name"]),
        `Several Experiments/Evaluations were found (${chosen.map((t) => t.name).join(", ")}).`,
        "Choose one with --target NAME.",
      ),
    );
    return { value: undefined, diagnostics: sortDiagnostics(diagnostics) };
  }
  if (hasErrors(diagnostics)) {
    diagnostics.push(...buildPlan(r.value.world, chosen[0]!, { cwd: settled.cwd, env: settled.env }).diagnostics);
    return { value: undefined, diagnostics: sortDiagnostics(dedupe(diagnostics)) };
  }
  const plan = buildPlan(r.value.world, chosen[0]!, {
    cwd: settled.cwd,
    env: settled.env,
    sources: r.value.loaded.sources,
    ...(opts.seeds ? { seeds: opts.seeds } : {}),
  });
  diagnostics.push(...plan.diagnostics);
  return { value: hasErrors(diagnostics) ? undefined : plan.value, diagnostics: sortDiagnostics(dedupe(diagnostics)) };
}

/** The Synthesis to run (`reins synth`): the one in `paths`, or the one named `target`. */
export function compileSynthesis(paths: readonly string[], opts: CompileOptions = {}): Result<ResolvedSynthesis | undefined> {
  const r = loadAndResolve(paths, settle(opts));
  const diagnostics: Diagnostic[] = [...r.diagnostics];
  const all = r.value.world.syntheses;
  const chosen = opts.target ? all.filter((d) => d.name === opts.target) : all;
  if (chosen.length !== 1) {
    const file = paths[0] ?? ".";
    const message =
      chosen.length === 0
        ? opts.target
          ? `No Synthesis named "${opts.target}".`
          : "There is no Synthesis document."
        : `Several Syntheses were found (${chosen.map((d) => d.name).join(", ")}).`;
    diagnostics.push(
      makeDiagnostic(
        "NoSynthesisTarget",
        chosen[1] ? positionAt(chosen[1].source, ["metadata", "name"]) : { file, line: 1, column: 1 },
        message,
        CODES.NoSynthesisTarget,
      ),
    );
    return { value: undefined, diagnostics: sortDiagnostics(diagnostics) };
  }
  const resolved = resolveSynthesis(chosen[0]!, r.value.world.models);
  diagnostics.push(...resolved.diagnostics);
  return { value: hasErrors(diagnostics) ? undefined : resolved.value, diagnostics: sortDiagnostics(dedupe(diagnostics)) };
}

/** The expanded documents (families rendered into Tasks), as plain objects for YAML output. */
export function renderTasks(world: Loaded["world"]): Record<string, unknown>[] {
  return [...world.tasks.values()].map(({ value }) => taskDocument(value));
}

export function taskDocument(t: ResolvedTask): Record<string, unknown> {
  const metadata: Record<string, unknown> = { name: t.name };
  if (Object.keys(t.labels).length > 0) metadata.labels = t.labels;
  if (Object.keys(t.annotations).length > 0) metadata.annotations = t.annotations;
  const fileOut = (f: ResolvedTask["files"][number]) => {
    const o: Record<string, unknown> = { path: f.path };
    if (f.encoding === "utf8") o.content = f.content;
    else o.base64 = f.content;
    if (f.mode & 0o111) o.executable = true;
    return o;
  };
  const spec: Record<string, unknown> = { instruction: t.instruction, category: t.category };
  if (t.files.length > 0) spec.workspace = { files: t.files.map(fileOut) };
  if (t.hiddenFiles.length > 0) spec.hidden = { files: t.hiddenFiles.map(fileOut) };
  if (t.mcpServers && t.mcpServers.length > 0) {
    spec.mcpServers = t.mcpServers.map((s) => {
      const o: Record<string, unknown> = { name: s.name };
      if (s.shipped) {
        o.shipped = s.shipped;
        if (s.command.length > 0) o.args = s.command;
      } else o.command = s.command;
      o.where = s.where;
      if (Object.keys(s.env).length > 0) o.env = s.env;
      if (s.files.length > 0) o.files = s.files.map(fileOut);
      if (s.tools) o.tools = s.tools;
      o.startupSeconds = s.startupSeconds;
      return o;
    });
  }
  spec.verifier = verifierSpecOf(t.verifier);
  spec.timeoutSeconds = t.timeoutSeconds;
  if (t.reference && t.reference.length > 0) spec.reference = { turns: t.reference };
  return { apiVersion: "reins/v1alpha1", kind: "Task", metadata, spec };
}

function verifierSpecOf(v: ResolvedTask["verifier"]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (v.checks.length > 0) {
    out.checks = v.checks.map((c) => {
      const { type, name, weight, ...rest } = c as Record<string, unknown> & { type: string };
      const o: Record<string, unknown> = { [type]: rest };
      if (name !== undefined) o.name = name;
      if (weight !== undefined) o.weight = weight;
      return o;
    });
  }
  if (v.script) out.script = v.script;
  if (v.rubric) {
    const r: Record<string, unknown> = { items: v.rubric.items, files: v.rubric.files };
    if (v.rubric.judge !== undefined) r.judge = v.rubric.judge;
    out.rubric = r;
  }
  if (Object.keys(v.combine.weights).length > 0 || v.combine.mode !== "weighted") out.combine = v.combine;
  out.passThreshold = v.passThreshold;
  return out;
}

function dedupe(ds: Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return ds.filter((d) => {
    const k = `${d.code}|${d.file}|${d.line}|${d.column}|${d.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
// What kind of file a path names ("a directory", "a FIFO"), for refusals that say why.
export { describeType } from "./source/project.js";
// Chat templates rendered on a work budget (compile-time check and the runtime renderer share it).
export {
  CHAT_TEMPLATE_LIMITS,
  ChatTemplateTooMuchWork,
  chatTemplateWorkProblem,
  parseChatTemplate,
  renderChatTemplate,
  type ChatTemplateLimits,
} from "./resolve/chat-template-render.js";
