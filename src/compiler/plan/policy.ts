/**
 * The policy Model of an Experiment or Evaluation (pure): the Model `model` names, refused where it
 * cannot serve the target — an Experiment trains only through an engine that reloads weights, a
 * hosted policy of an Evaluation must speak each harness's dialect — and required when a harness
 * calls a model.
 */
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import type { ResolvedModel } from "../contract/plan.js";
import type { World } from "../resolve/world.js";
import { suggest } from "../schema/validate.js";
import { positionAt } from "../source/yaml.js";
import type { At, HarnessUseEntry, PlanTarget } from "./target.js";

export interface PlanPolicy {
  model: ResolvedModel | undefined;
  /** The first harness that calls a model, if any. */
  needsModel: HarnessUseEntry | undefined;
}

export function resolvePolicy(world: World, target: PlanTarget, harnesses: readonly HarnessUseEntry[], at: At): Result<PlanPolicy> {
  const diagnostics: Diagnostic[] = [];
  const isExperiment = target.kind === "Experiment";
  const ref = target.spec.model;
  let model: ResolvedModel | undefined;
  if (ref) {
    const m = world.models.get(ref.name);
    if (!m) {
      const guess = suggest(ref.name, [...world.models.keys()]);
      diagnostics.push(
        makeDiagnostic(
          "UnknownReference",
          at("model", "name"),
          `No Model named "${ref.name}".${guess ? ` Did you mean "${guess}"?` : ""}`,
          CODES.UnknownReference,
        ),
      );
    } else {
      model = m.value;
      const engineAt = positionAt(m.doc.source, ["spec", "engine", "type"]);
      const setAt = `engine type set at ${engineAt.file}:${engineAt.line}:${engineAt.column}`;
      if (isExperiment && (model.engine.type === "llama-cpp" || model.engine.type === "hosted")) {
        const message =
          model.engine.type === "hosted"
            ? `The Model "${ref.name}" is a hosted model (${model.engine.api} ${model.engine.model}): it returns no token ids and loads no weights, so an Experiment cannot train it.`
            : `The Model "${ref.name}" is served by llama.cpp, which cannot load the weights training writes: an Experiment trains through an engine that reloads them.`;
        diagnostics.push(makeDiagnostic("EngineCannotTrain", at("model", "name"), message, CODES.EngineCannotTrain, "error", [setAt]));
      }
      if (!isExperiment && model.engine.type === "hosted") {
        const api = model.engine.api;
        harnesses.forEach(({ use, harness }, i) => {
          if (!harness?.dialect || harness.dialect === api) return;
          const message = `The harness ${use.name} speaks ${harness.dialect}, but the policy "${ref.name}" is a hosted ${api} model: the proxy passes a harness's requests through to a hosted model as they are.`;
          diagnostics.push(makeDiagnostic("HostedDialectMismatch", at("harnesses", i, "name"), message, CODES.HostedDialectMismatch, "error", [setAt]));
        });
      }
    }
  }
  const needsModel = harnesses.find((h) => h.harness?.dialect);
  if (needsModel && !ref) {
    diagnostics.push(
      makeDiagnostic(
        "ModelRequired",
        at("harnesses"),
        `Harness "${needsModel.use.name}" calls a model (${needsModel.harness!.dialect}), but no model is given.`,
        CODES.ModelRequired,
      ),
    );
  }
  return { value: { model, needsModel }, diagnostics };
}
