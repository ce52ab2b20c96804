/**
 * The parts an Experiment or Evaluation names, resolved against the world (pure): the selected
 * tasks, the harnesses, the policy, its MCP servers, the sandbox and, for an Experiment, the
 * algorithm, the trainer and the seeds. Every problem found on the way is a diagnostic; the parts
 * are returned only when there is no error.
 */
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import type { SourcePosition } from "../contract/problem.js";
import type { ResolvedAlgorithm, ResolvedTrainer } from "../contract/plan.js";
import { resolveMcpServers } from "../resolve/mcp-servers.js";
import { checkAlgorithm, type World } from "../resolve/world.js";
import { checkTrainer, resolveAlgorithm, resolveSandbox, resolveTrainer } from "../resolve/defaults.js";
import { checkPythonAt, type PythonEnv } from "../resolve/python-path.js";
import { suggest } from "../schema/validate.js";
import { positionAt } from "../source/yaml.js";
import { resolveHarnessUses } from "./harness-uses.js";
import { resolvePolicy } from "./policy.js";
import { checkSandbox } from "./sandbox-checks.js";
import { checkSeeds } from "./seeds.js";
import { selectTasks } from "./select.js";
import type { At, PlanTarget, TargetParts } from "./target.js";

export interface TargetOptions {
  seeds?: readonly number[];
  env?: PythonEnv;
}

export function resolveTarget(world: World, target: PlanTarget, opts: TargetOptions): Result<TargetParts | undefined> {
  const diagnostics: Diagnostic[] = [];
  const { doc, spec } = target;
  const at: At = (...p) => positionAt(doc.source, ["spec", ...p]);
  const isExperiment = target.kind === "Experiment";

  const selected = selectTasks(world, spec.tasks, doc, ["spec", "tasks"]);
  diagnostics.push(...selected.diagnostics);
  const heldOut =
    target.kind === "Experiment" && target.spec.heldOut ? selectTasks(world, target.spec.heldOut, doc, ["spec", "heldOut"]) : { names: [], diagnostics: [] };
  diagnostics.push(...heldOut.diagnostics);
  const heldSet = new Set(heldOut.names);
  const training = selected.names.filter((n) => !heldSet.has(n));
  if (isExperiment && heldOut.names.some((n) => selected.names.includes(n))) {
    diagnostics.push(
      makeDiagnostic(
        "HeldOutOverlap",
        at("heldOut"),
        "Some held-out tasks are also selected for training; they are used for evaluation only.",
        CODES.HeldOutOverlap,
        "warning",
      ),
    );
  }
  if (selected.names.length === 0 && !selected.diagnostics.some((d) => d.severity === "error")) {
    diagnostics.push(makeDiagnostic("NoTasksSelected", at("tasks"), "The task selection is empty.", CODES.NoTasksSelected));
  }

  const harnesses = resolveHarnessUses(world, target, at);
  diagnostics.push(...harnesses.diagnostics);
  const policy = resolvePolicy(world, target, harnesses.value, at);
  diagnostics.push(...policy.diagnostics);
  const mcp = resolveMcpServers(spec.mcpServers, { specFile: doc.source.absPath, roots: doc.source.roots, positionOf: (p) => at("mcpServers", ...p) });
  diagnostics.push(...mcp.diagnostics);

  const sandbox = refOrInline(spec.sandbox, world.sandboxes, resolveSandbox, "Sandbox", () => at("sandbox", "name"), diagnostics) ?? resolveSandbox(undefined);
  const atSandbox: At = (...p) => at("sandbox", ...(hasName(spec.sandbox) ? [] : p));
  diagnostics.push(...checkSandbox(sandbox, harnesses.value, policy.value.needsModel?.use.name, atSandbox, (i) => at("harnesses", i, "name")));

  let algorithm: ResolvedAlgorithm | undefined;
  let trainer: ResolvedTrainer | undefined;
  let seeds: readonly number[] | undefined;
  if (target.kind === "Experiment") {
    const s = target.spec;
    algorithm = refOrInline(s.algorithm, world.algorithms, resolveAlgorithm, "Algorithm", () => at("algorithm", "name"), diagnostics);
    if (algorithm && !hasName(s.algorithm)) diagnostics.push(...checkAlgorithm(algorithm, doc, ["spec", "algorithm"]));
    trainer = refOrInline(s.trainer, world.trainers, resolveTrainer, "Trainer", () => at("trainer", "name"), diagnostics) ?? resolveTrainer(undefined);
    if (s.trainer && !hasName(s.trainer)) {
      diagnostics.push(...checkTrainer(s.trainer, (...p) => at("trainer", ...p)));
      const inline = trainer;
      diagnostics.push(...checkPythonAt(doc, ["spec", "trainer", "python"], opts.env ?? {}, (python) => (inline.python = python)));
    }
    if (trainer.device === "cpu" && (trainer.nodes > 1 || trainer.gpus > 0)) {
      diagnostics.push(
        makeDiagnostic(
          "InvalidValue",
          at("trainer"),
          `A CPU trainer runs on one node without GPUs (nodes ${trainer.nodes}, gpus ${trainer.gpus}).`,
          "Use device: cuda for multi-node or GPU training, or set nodes: 1 and gpus: 0.",
        ),
      );
    }
    const checked = checkSeeds(s, opts.seeds, at);
    diagnostics.push(...checked.diagnostics);
    seeds = checked.value;
  }
  if (diagnostics.some((d) => d.severity === "error")) return { value: undefined, diagnostics };
  const value: TargetParts = {
    at,
    selected: selected.names,
    training,
    heldOut: heldOut.names,
    harnesses: harnesses.value,
    model: policy.value.model,
    mcpServers: mcp.value,
    sandbox,
    algorithm,
    trainer,
    seeds,
  };
  return { value, diagnostics };
}

/** Whether a sandbox, algorithm or trainer field has a `name` (a reference, or an inline spec that names itself). */
function hasName(value: object | undefined): value is { name: unknown } {
  return value !== undefined && "name" in value;
}

/** A reference to a document by name (`{name}` alone), as opposed to an inline spec. */
function isRef(value: object | undefined): value is { name: string } {
  return value !== undefined && typeof (value as { name?: unknown }).name === "string" && Object.keys(value).length === 1;
}

/** The document `value` names (UnknownReference when there is none), or `value` resolved inline. */
function refOrInline<S extends object, T>(
  value: { name: string } | S | undefined,
  table: Map<string, { value: T }>,
  resolveInline: (spec: S) => T,
  kind: string,
  pos: () => SourcePosition,
  diagnostics: Diagnostic[],
): T | undefined {
  if (value === undefined) return undefined;
  if (!isRef(value)) return resolveInline(value);
  const e = table.get(value.name);
  if (!e) {
    const guess = suggest(value.name, [...table.keys()]);
    diagnostics.push(
      makeDiagnostic("UnknownReference", pos(), `No ${kind} named "${value.name}".${guess ? ` Did you mean "${guess}"?` : ""}`, CODES.UnknownReference),
    );
    return undefined;
  }
  return e.value;
}
