/**
 * The rubric judges of a run, built from the plan: each rubric names the Model that grades it
 * (`rubric.judge`; the compiler sets it to the policy's name when the spec leaves it out) and the
 * plan carries the judge Models other than the policy (`plan.judges`). One Judge answers for all
 * of them, routing each request to the Model its rubric names.
 *
 * The policy as judge: `reins run` passes its live engine (`policy`), so the policy grades with
 * the weights serving at that moment; `reins eval` builds it from the plan's model, like any other.
 */
import type { Plan, ResolvedModel } from "../../compiler/contract/plan.js";
import type { Engine } from "../engines/engine.js";
import { createEngine } from "../engines/registry.js";
import { loadModelRuntime, type ModelRuntime } from "../model/model-runtime.js";
import { createEngineJudge, createHostedJudge, type Judge } from "../verifiers/judge.js";

export interface RunJudges {
  /** Routes each request to the judge its rubric names; undefined when the plan has no rubric. */
  judge?: Judge;
  /** Judge model names, the policy's included when a rubric uses it. */
  names: string[];
  /** Closes the engines built here (not the policy's live engine). */
  close(): Promise<void>;
}

/** The judge Model a rubric uses in this plan (its own, or the policy when it names none). */
export function judgeNameOf(rubric: { judge?: string }, plan: Pick<Plan, "model">): string | undefined {
  return rubric.judge ?? plan.model?.name;
}

export async function createJudges(plan: Plan, o: { policy?: { engine: Engine; model: ResolvedModel; runtime?: ModelRuntime } } = {}): Promise<RunJudges> {
  const names = [...new Set(plan.tasks.flatMap((t) => (t.verifier.rubric ? [judgeNameOf(t.verifier.rubric, plan)] : [])))].filter(
    (n): n is string => n !== undefined,
  );
  const models = new Map<string, ResolvedModel>((plan.judges ?? []).map((m) => [m.name, m]));
  if (plan.model) models.set(plan.model.name, plan.model);
  const judges = new Map<string, Judge>();
  const built: Engine[] = [];
  const close = async () => {
    await Promise.all(built.map((e) => e.close?.().catch(() => undefined)));
  };
  try {
    for (const name of names) {
      const model = models.get(name);
      if (!model) continue; // the rubric reports JudgeUnavailable with the name it asked for
      if (o.policy && plan.model && name === plan.model.name && model.engine.type !== "hosted") {
        const runtime = o.policy.runtime ?? (await loadModelRuntime(o.policy.model));
        judges.set(name, createEngineJudge({ runtime, engine: o.policy.engine }));
        continue;
      }
      const m = model;
      if (m.engine.type === "hosted") {
        judges.set(name, createHostedJudge(name, m.engine, { maxTokens: Math.min(1024, m.sampling.maxTokens) }));
        continue;
      }
      const runtime = await loadModelRuntime(m);
      const engine = await createEngine(m.engine, { model: m, runtime });
      built.push(engine);
      judges.set(name, createEngineJudge({ runtime, engine }));
    }
  } catch (err) {
    await close();
    throw err;
  }
  if (names.length === 0) return { names, close };
  const fallback = plan.model?.name;
  const judge: Judge = {
    name: fallback ?? names[0]!,
    ask(req) {
      const name = req.judge ?? fallback;
      const j = name !== undefined ? judges.get(name) : undefined;
      if (!j) return Promise.reject(new Error(`no judge model named ${JSON.stringify(name ?? "")} in this run's plan`));
      return j.ask(req);
    },
  };
  return { judge, names, close };
}
