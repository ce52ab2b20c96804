/** The rubric judge of a run: the plan's model through its own engine instance. */
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { createEngine } from "../engines/registry.js";
import { loadModelRuntime } from "../model/model-runtime.js";
import { createEngineJudge, type Judge } from "../verifiers/judge.js";

export async function createJudge(m: ResolvedModel): Promise<Judge> {
  const runtime = await loadModelRuntime(m);
  const engine = await createEngine(m.engine, { model: m, runtime });
  return createEngineJudge({ runtime, engine });
}
