/** The rubric judge of a run: the plan's model through its own engine instance. */
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { createEngine } from "../engines/registry.js";
import { loadModelRuntime } from "../model/model-runtime.js";
import { createEngineJudge, type Judge } from "../verifiers/judge.js";
import { absolutizeModel } from "./executor.js";

export async function createJudge(model: ResolvedModel, root: string): Promise<Judge> {
  const m = absolutizeModel(model, root);
  const runtime = await loadModelRuntime(m);
  const engine = await createEngine(m.engine, { model: m, runtime });
  return createEngineJudge({ runtime, engine });
}
