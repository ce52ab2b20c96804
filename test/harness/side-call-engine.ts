/**
 * Test helper: a scripted engine for runs with side calls. A harness's side calls (subagents,
 * compaction) interleave with its main calls in an order that depends on the harness, so one
 * script in call order is brittle. This engine keeps one script per kind of call: each call's
 * prompt is decoded with the model's tokenizer, the first route whose test accepts the text gets
 * the call, and that route's script answers it with its next turn (per rollout, in order, as the
 * plain scripted engine does); a call no route accepts takes the next turn of the main script.
 */
import type { ResolvedModel, ScriptedTurn } from "../../src/compiler/contract/plan.js";
import type { Engine, GenerateChunk, GenerateRequest, GenerateResult } from "../../src/runtime/engines/engine.js";
import { ScriptedEngine } from "../../src/runtime/engines/scripted.js";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";

export interface SideRoute {
  /** Names the route in failure messages. */
  name: string;
  /** Whether a call, given its decoded prompt, belongs to this route. */
  accepts(prompt: string): boolean;
  script: ScriptedTurn[];
}

/** Whether the last `chars` characters of a decoded prompt contain `mark` (where harnesses put a side call's instruction). */
export function tailIncludes(mark: string, chars = 4000): (prompt: string) => boolean {
  return (prompt) => prompt.slice(-chars).includes(mark);
}

export async function createSideCallEngine(model: ResolvedModel, main: ScriptedTurn[], routes: SideRoute[]): Promise<Engine & { routed: string[] }> {
  const runtime = await loadModelRuntime(model);
  const ctx = { model, runtime };
  const mainEngine = new ScriptedEngine(main, ctx);
  const engines = routes.map((r) => ({ route: r, engine: new ScriptedEngine(r.script, ctx) }));
  const routed: string[] = [];
  const pick = (req: GenerateRequest): ScriptedEngine => {
    const text = runtime.tokenizer.decode(req.promptIds);
    const hit = engines.find((e) => e.route.accepts(text));
    routed.push(hit ? hit.route.name : "main");
    return hit ? hit.engine : mainEngine;
  };
  return {
    type: "scripted",
    routed,
    generate: (req: GenerateRequest): Promise<GenerateResult> => pick(req).generate(req),
    generateStream: (req: GenerateRequest, onChunk: (c: GenerateChunk) => void): Promise<GenerateResult> => pick(req).generateStream(req, onChunk),
  };
}
