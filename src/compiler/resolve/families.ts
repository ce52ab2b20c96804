/**
 * TaskFamily expansion: matrix cells and/or seeded generation → parameter sets → rendered Task
 * specs (every string of the template is a Handlebars template) → validated again → ResolvedTask.
 * Tasks are named `<family>-<slug>-<hash6>`; a diagnostic names the template line and the cell.
 */
import type { z } from "zod";
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import { canonicalJson, shortHash } from "../contract/hash.js";
import type { ResolvedTask, ResolvedVerifier } from "../contract/plan.js";
import { TaskSpecSchema, type TaskSpec } from "../schema/task.js";
import type { TaskFamilySpec } from "../schema/task-family.js";
import { issuesToDiagnostics, suggest, type TypedDocument } from "../schema/validate.js";
import { positionAt, type PathSegment } from "../source/yaml.js";
import { seededStream } from "../contract/seeds.js";
import { expandMatrix, measureMatrix, generateValues, generatorForms, unknownMatrixKeys, type Cell, type Generator } from "./matrix.js";
import { renderTemplate, slugify, type TemplateFailure } from "./templates.js";
import { resolveTask } from "./tasks.js";
import { MAX_MATRIX_COMPARISONS, MAX_RENDERED_VALUES, MAX_TASKS, TemplateBudget, countValues, formatCount } from "./limits.js";

/** What expanding families may still spend: shared by every family of a world. */
export interface ExpansionBudget {
  /** Tasks made so far (Task documents and earlier families). */
  tasks: number;
  template: TemplateBudget;
}

export function newExpansionBudget(tasks = 0): ExpansionBudget {
  return { tasks, template: new TemplateBudget() };
}

export function expandFamily(
  fam: TypedDocument<"TaskFamily">,
  verifiers: ReadonlyMap<string, ResolvedVerifier>,
  budget: ExpansionBudget = newExpansionBudget(),
): Result<ResolvedTask[]> {
  const diagnostics: Diagnostic[] = [];
  const spec: TaskFamilySpec = fam.doc.spec;
  const src = fam.source;
  const famName = fam.name;
  const at = (path: PathSegment[], key = false) => positionAt(src, ["spec", ...path], { key });

  const cellsResult = parameterSets(spec, famName, budget);
  for (const p of cellsResult.problems) diagnostics.push(makeDiagnostic(p.code, at(p.path, p.key), p.message, p.hint ?? CODES[p.code], p.severity ?? "error"));
  if (cellsResult.problems.some((p) => (p.severity ?? "error") === "error")) return { value: [], diagnostics };

  // biome-ignore lint/suspicious/noExplicitAny: the document before validation, read for one field
  const templateRaw = (src.value as any)?.spec?.template as unknown;
  budget.tasks += cellsResult.cells.length;
  const params = spec.parameters ?? [];
  const tasks: ResolvedTask[] = [];
  const seenTemplateErrors = new Map<string, { d: Diagnostic; count: number }>();
  const names = new Set<string>();

  let skipped = 0;
  for (const rawCell of cellsResult.cells) {
    if (budget.template.spent()) {
      // A limit for the whole compile is passed: every further cell would fail the same way.
      skipped++;
      continue;
    }
    budget.template.startTask();
    const cell = withDefaults(rawCell, params);
    const cellNote = `in matrix cell ${describeCell(rawCell)}`;
    const paramProblems = checkParameters(cell, params);
    if (paramProblems.length > 0) {
      for (const p of paramProblems) recordOnce(seenTemplateErrors, makeDiagnostic(p.code, at(["parameters"]), p.message, CODES[p.code], "error", [cellNote]));
      continue;
    }
    const failures: { path: PathSegment[]; error: TemplateFailure }[] = [];
    const rendered = renderValue(templateRaw, cell, [], failures, budget.template) as TaskSpec;
    if (failures.length > 0) {
      for (const f of failures) {
        const code = failureCode(f.error);
        const pos = at(["template", ...f.path]);
        const tpl = valueAtPath(templateRaw, f.path);
        const maxLine = typeof tpl === "string" ? tpl.replace(/\n+$/, "").split("\n").length : 1;
        const tline = f.error.line !== undefined ? Math.min(f.error.line, maxLine) : undefined;
        const line = tline !== undefined ? templateLine(src, ["spec", "template", ...f.path], tline) : pos.line;
        const column = line === pos.line ? pos.column : firstColumn(src.text, line);
        const notes = [cellNote];
        if (tline !== undefined) notes.unshift(`template line ${tline}`);
        recordOnce(seenTemplateErrors, makeDiagnostic(code, { file: pos.file, line, column }, f.error.message, CODES[code], "error", notes));
      }
      continue;
    }
    const name = taskName(famName, rawCell, cell);
    if (names.has(name)) continue; // identical parameter sets render identical tasks
    names.add(name);
    const parsed = TaskSpecSchema.safeParse(rendered);
    if (!parsed.success) {
      // biome-ignore lint/suspicious/noExplicitAny: zod's issue type differs between the schema's two declarations
      const ds = issuesToDiagnostics(src, TaskSpecSchema as unknown as z.ZodType, parsed.error.issues as any, ["spec", "template"]);
      for (const d of ds) recordOnce(seenTemplateErrors, { ...d, notes: [...(d.notes ?? []), `rendered ${cellNote}`] });
      continue;
    }
    const hash = shortHash(cell, 6);
    const labels: Record<string, string> = { ...(fam.doc.metadata.labels ?? {}), "reins.dev/family": famName };
    let labelFailed = false;
    for (const [k, tpl] of Object.entries(spec.taskLabels ?? {})) {
      const r = renderTemplate(tpl, cell, budget.template);
      if (r.ok) labels[k] = r.value;
      else {
        labelFailed = true;
        const code = r.error.kind === "work" || r.error.kind === "size" ? failureCode(r.error) : "TemplateRender";
        recordOnce(seenTemplateErrors, makeDiagnostic(code, at(["taskLabels", k]), r.error.message, CODES[code], "error", [cellNote]));
      }
    }
    if (labelFailed) continue;
    const res = resolveTask(parsed.data, {
      name,
      labels,
      annotations: { ...(fam.doc.metadata.annotations ?? {}), "reins.dev/parameters": canonicalJson(cell), "reins.dev/hash": hash },
      category: spec.category,
      specFile: src.absPath,
      roots: src.roots,
      positionOf: (p) => at(["template", ...p]),
      verifiers,
      provenance: { family: famName, parameters: cell, hash },
      notes: [cellNote],
    });
    for (const d of res.diagnostics) recordOnce(seenTemplateErrors, d);
    if (res.value) tasks.push(res.value);
  }
  for (const { d, count } of seenTemplateErrors.values()) {
    diagnostics.push(count > 1 ? { ...d, notes: [...(d.notes ?? []), `and ${count - 1} more cell(s)`] } : d);
  }
  if (skipped > 0) {
    const note = `${formatCount(skipped)} cell(s) of family "${famName}" were not rendered`;
    const i = diagnostics.findLastIndex((d) => d.code === "TemplateTooMuchWork" || d.code === "RenderedTooLarge");
    if (i >= 0) diagnostics[i] = { ...diagnostics[i]!, notes: [...(diagnostics[i]!.notes ?? []), note] };
    else
      diagnostics.push(
        makeDiagnostic(
          "TemplateTooMuchWork",
          at(["template"]),
          "The templates' limits for the whole compile are spent by earlier families.",
          CODES.TemplateTooMuchWork,
          "error",
          [note],
        ),
      );
  }
  return { value: tasks, diagnostics };
}

type FailureCode = "TemplateSyntax" | "TemplateUnknownParameter" | "TemplateUnknownHelper" | "TemplateRender" | "TemplateTooMuchWork" | "RenderedTooLarge";

function failureCode(e: TemplateFailure): FailureCode {
  const codes: Record<TemplateFailure["kind"], FailureCode> = {
    syntax: "TemplateSyntax",
    "unknown-parameter": "TemplateUnknownParameter",
    "unknown-helper": "TemplateUnknownHelper",
    render: "TemplateRender",
    work: "TemplateTooMuchWork",
    size: "RenderedTooLarge",
  };
  return codes[e.kind];
}

/** At most how many values one parameter set holds: the largest value of each axis, entry and generator. */
function parameterValuesBound(spec: TaskFamilySpec): number {
  const largest = (list: readonly unknown[] | undefined) => (list ?? []).reduce<number>((m, v) => Math.max(m, countValues(v, MAX_RENDERED_VALUES)), 0);
  const { include, exclude: _e, ...axes } = (spec.matrix ?? {}) as { include?: unknown[]; exclude?: unknown[] } & Record<string, unknown[]>;
  let n = largest(include);
  for (const values of Object.values(axes)) n += largest(values);
  for (const p of spec.parameters ?? []) if (p.default !== undefined) n += countValues(p.default, MAX_RENDERED_VALUES);
  for (const g of (spec.generate?.values ?? []) as Generator[]) n += g.pick ? largest(g.pick) : g.sample ? countValues(g.sample.from, MAX_RENDERED_VALUES) : 1;
  return n;
}

function recordOnce(map: Map<string, { d: Diagnostic; count: number }>, d: Diagnostic): void {
  const key = `${d.code}|${d.file}|${d.line}|${d.column}|${d.message}`;
  const prev = map.get(key);
  if (prev) prev.count++;
  else map.set(key, { d, count: 1 });
}

interface Problem {
  code:
    | "MatrixEmpty"
    | "MatrixTooLarge"
    | "FamilyTooLarge"
    | "MatrixTooManyEntries"
    | "TooManyTasks"
    | "TemplateTooMuchWork"
    | "RenderedTooLarge"
    | "InvalidParameter"
    | "MissingParameter"
    | "InvalidValue"
    | "UnknownMatrixKey"
    | "MatrixEntryUnused";
  path: PathSegment[];
  message: string;
  /** Point at the key of the last path segment. */
  key?: boolean;
  hint?: string;
  severity?: "error" | "warning";
}

/** The parameter sets of a family: matrix cells, each expanded by `generate` when present. */
export function parameterSets(spec: TaskFamilySpec, famName: string, budget: ExpansionBudget = newExpansionBudget()): { cells: Cell[]; problems: Problem[] } {
  const problems: Problem[] = [];
  const matrix = spec.matrix as Record<string, unknown> | undefined;
  for (const u of unknownMatrixKeys(
    matrix,
    (spec.parameters ?? []).map((p) => p.name),
  )) {
    const guess = suggest(u.key, u.allowed);
    problems.push({
      code: "UnknownMatrixKey",
      path: ["matrix", u.list, u.index, u.key],
      key: true,
      message: `\`${u.list}\` entry ${u.index + 1} names "${u.key}", which is not ${u.list === "exclude" ? "an axis of the matrix" : "an axis of the matrix or a declared parameter"}.${guess ? ` Did you mean "${guess}"?` : ""}`,
      hint: `${u.list === "exclude" ? "`exclude` entries name axes only" : "`include` entries name axes or parameters declared in `parameters`"}; here: ${u.allowed.join(", ") || "none"}.`,
    });
  }
  if (problems.length > 0) return { cells: [], problems };
  const left = Math.max(0, MAX_TASKS - budget.tasks);
  // Every task walks the whole template and its own parameter values (names, annotations, hashes):
  // bounded from the spec's sizes before a cell is made.
  const templateValues = countValues(spec.template, MAX_RENDERED_VALUES + 1);
  const cellValues = parameterValuesBound(spec);
  const taskBound = measureMatrix(matrix).cells * (spec.generate?.count ?? 1);
  const visits = taskBound * (templateValues + cellValues);
  if (taskBound <= left && visits > MAX_RENDERED_VALUES) {
    const message = `The family would render ${formatCount(visits)} values (up to ${formatCount(taskBound)} tasks × ${formatCount(templateValues)} values and \`{{…}}\` in the template and up to ${formatCount(cellValues)} in the parameters); the limit is ${formatCount(MAX_RENDERED_VALUES)}.`;
    return { cells: [], problems: [{ code: "FamilyTooLarge", path: ["template"], key: true, message }] };
  }
  const { cells, tooLarge, tooManyEntries, unusedExcludes, size } = expandMatrix(matrix, left);
  if (tooLarge) {
    const message =
      size.cells > MAX_TASKS
        ? `The matrix has ${formatCount(size.cells)} cells${size.cells > size.product ? ` (${formatCount(size.product)} from its axes and up to ${formatCount(size.cells - size.product)} from \`include\`)` : ""}; the limit is ${formatCount(MAX_TASKS)} tasks.`
        : `The matrix has ${formatCount(size.cells)} cells, and ${formatCount(budget.tasks)} tasks come before it; the limit is ${formatCount(MAX_TASKS)} tasks in all.`;
    return { cells: [], problems: [{ code: size.cells > MAX_TASKS ? "MatrixTooLarge" : "TooManyTasks", path: ["matrix"], message }] };
  }
  if (tooManyEntries) {
    const message = `\`include\` and \`exclude\` would make ${formatCount(size.comparisons)} comparisons with the matrix's ${formatCount(size.product)} cells; the limit is ${formatCount(MAX_MATRIX_COMPARISONS)}.`;
    return { cells: [], problems: [{ code: "MatrixTooManyEntries", path: ["matrix"], message }] };
  }
  for (const i of unusedExcludes) {
    problems.push({
      code: "MatrixEntryUnused",
      path: ["matrix", "exclude", i],
      message: `\`exclude\` entry ${i + 1} matches no cell of the matrix, so it removes nothing.`,
      severity: "warning",
    });
  }
  let base = spec.matrix ? cells : [{}];
  if (spec.matrix && base.length === 0)
    return { cells: [], problems: [...problems, { code: "MatrixEmpty", path: ["matrix"], message: "The matrix expands to no cells." }] };
  if (spec.generate) {
    const gens = spec.generate.values as Generator[];
    gens.forEach((g, i) => {
      const forms = generatorForms(g);
      if (forms.length !== 1)
        problems.push({
          code: "InvalidValue",
          path: ["generate", "values", i],
          message: `Generator "${g.name}" must use exactly one of pick, sample, int, float, bool, template (it uses ${forms.length === 0 ? "none" : forms.join(", ")}).`,
        });
      if (g.int && g.int.min > g.int.max)
        problems.push({ code: "InvalidValue", path: ["generate", "values", i, "int"], message: `Generator "${g.name}" has min > max.` });
      if (g.float && g.float.min > g.float.max)
        problems.push({ code: "InvalidValue", path: ["generate", "values", i, "float"], message: `Generator "${g.name}" has min > max.` });
      if (g.pick && g.pick.length === 0)
        problems.push({ code: "InvalidValue", path: ["generate", "values", i, "pick"], message: `Generator "${g.name}" picks from an empty list.` });
    });
    const total = base.length * spec.generate.count;
    if (total > left) {
      const before = budget.tasks > 0 ? `, and ${formatCount(budget.tasks)} tasks come before it` : "";
      problems.push({
        code: "TooManyTasks",
        path: ["generate", "count"],
        message: `The family would expand to ${formatCount(total)} tasks (${formatCount(base.length)} cells × count ${formatCount(spec.generate.count)})${before}; the limit is ${formatCount(MAX_TASKS)} tasks in all.`,
      });
    }
    if (problems.some((p) => (p.severity ?? "error") === "error")) return { cells: [], problems };
    const seed = spec.generate.seed ?? 0;
    const out: Cell[] = [];
    for (const cell of base) {
      const cellKey = canonicalJson(cell);
      for (let i = 0; i < spec.generate.count; i++) {
        const random = seededStream(seed, "family-cell", famName, cellKey, i);
        let failed: TemplateFailure | undefined;
        out.push(
          generateValues(gens, random, cell, (source, ctx) => {
            const r = renderTemplate(source, ctx, budget.template);
            if (!r.ok) failed ??= r.error;
            return r.ok ? r.value : "";
          }),
        );
        if (failed && (failed.kind === "work" || failed.kind === "size")) {
          const i = gens.findIndex((g) => g.template !== undefined);
          return {
            cells: [],
            problems: [
              ...problems,
              {
                code: failed.kind === "work" ? "TemplateTooMuchWork" : "RenderedTooLarge",
                path: ["generate", "values", Math.max(i, 0), "template"],
                message: failed.message,
              },
            ],
          };
        }
      }
    }
    base = out;
  }
  return { cells: base, problems };
}

function withDefaults(cell: Cell, params: NonNullable<TaskFamilySpec["parameters"]>): Cell {
  const out: Cell = {};
  for (const p of params) if (p.default !== undefined) out[p.name] = p.default;
  return Object.assign(out, cell);
}

function checkParameters(cell: Cell, params: NonNullable<TaskFamilySpec["parameters"]>): Problem[] {
  const out: Problem[] = [];
  for (const p of params) {
    const v = cell[p.name];
    if (v === undefined) {
      out.push({ code: "MissingParameter", path: ["parameters"], message: `Parameter "${p.name}" has no value.` });
      continue;
    }
    const type = p.type ?? "string";
    const ok =
      (type === "string" && typeof v === "string") ||
      (type === "integer" && Number.isInteger(v)) ||
      (type === "number" && typeof v === "number" && Number.isFinite(v)) ||
      (type === "boolean" && typeof v === "boolean") ||
      (type === "list" && Array.isArray(v)) ||
      (type === "object" && typeof v === "object" && v !== null && !Array.isArray(v));
    if (!ok) out.push({ code: "InvalidParameter", path: ["parameters"], message: `Parameter "${p.name}" should be ${type}, not ${JSON.stringify(v)}.` });
    else if (p.enum && !p.enum.some((e) => e === v))
      out.push({
        code: "InvalidParameter",
        path: ["parameters"],
        message: `Parameter "${p.name}" is ${JSON.stringify(v)}, not one of ${p.enum.map((e) => JSON.stringify(e)).join(", ")}.`,
      });
  }
  return out;
}

const SINGLE_PARAM = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/;

/** Render every string in a plain value; keys are left alone. */
function renderValue(v: unknown, ctx: Cell, path: PathSegment[], failures: { path: PathSegment[]; error: TemplateFailure }[], budget: TemplateBudget): unknown {
  if (typeof v === "string") {
    // A string that is exactly one parameter reference keeps the parameter's type ("{{n}}" → 42).
    const single = SINGLE_PARAM.exec(v);
    if (single && Object.hasOwn(ctx, single[1]!)) {
      const value = ctx[single[1]!];
      if (typeof value === "number" || typeof value === "boolean") return value;
    }
    const r = renderTemplate(v, ctx, budget);
    if (r.ok) {
      const tooLarge = budget.rendered(r.value.length);
      if (!tooLarge) return r.value;
      failures.push({ path, error: { kind: "size", message: tooLarge } });
      return "";
    }
    failures.push({ path, error: r.error });
    return v;
  }
  if (Array.isArray(v)) return v.map((x, i) => renderValue(x, ctx, [...path, i], failures, budget));
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = renderValue(x, ctx, [...path, k], failures, budget);
    return out;
  }
  return v;
}

function taskName(family: string, rawCell: Cell, cell: Cell): string {
  const hash = shortHash(cell, 6);
  const scalars = Object.values(rawCell).filter((x) => typeof x === "string" || typeof x === "number" || typeof x === "boolean");
  let slug = slugify(scalars.join("-"));
  const room = 63 - family.length - hash.length - 2;
  if (room <= 0) return `${family.slice(0, 63 - hash.length - 1)}-${hash}`.replace(/-+/g, "-");
  slug = slug.slice(0, room).replace(/-+$/, "");
  return slug ? `${family}-${slug}-${hash}` : `${family}-${hash}`;
}

function describeCell(cell: Cell): string {
  const s = canonicalJson(cell);
  return s.length > 120 ? `${s.slice(0, 117)}…` : s;
}

/** Line in the YAML file of line `n` of a template string (block scalars start one line below the key). */
function templateLine(src: TypedDocument["source"], path: PathSegment[], n: number): number {
  const pos = positionAt(src, path);
  const text = src.doc.getIn(path, true) as { type?: string } | undefined;
  const block = text?.type === "BLOCK_LITERAL" || text?.type === "BLOCK_FOLDED";
  return pos.line + (block ? n : n - 1);
}

function valueAtPath(root: unknown, path: PathSegment[]): unknown {
  let v = root;
  for (const p of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string | number, unknown>)[p as string];
  }
  return v;
}

function firstColumn(text: string, line: number): number {
  let start = 0;
  for (let i = 1; i < line; i++) {
    const nl = text.indexOf("\n", start);
    if (nl < 0) return 1;
    start = nl + 1;
  }
  let col = 1;
  while (text[start + col - 1] === " ") col++;
  return col;
}
