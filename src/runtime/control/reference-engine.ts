/**
 * The reference engine: replays each task's reference solution (model turns) through the real
 * harness, rendered in the model's output format and tokenized like any completion. Used to make
 * SFT trajectories (ClawGym's SFT stage) whose environment tokens are what the harness really sent.
 */
import type { ScriptedTurn } from "../../compiler/contract/plan.js";
import type { Engine, GenerateRequest, GenerateResult } from "../engines/engine.js";
import { EngineError } from "../engines/engine.js";
import type { EngineContext } from "../engines/registry.js";
import { ScriptedEngine } from "../engines/scripted.js";

export class ReferenceEngine implements Engine {
  readonly type = "reference";
  private readonly engines = new Map<string, ScriptedEngine>();

  /** `scriptOf(rolloutId)`: the reference turns for the plan's rollout a request belongs to. */
  constructor(
    private readonly ctx: EngineContext,
    private readonly scriptOf: (rolloutId: string) => { key: string; turns: ScriptedTurn[] } | undefined,
  ) {}

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    const s = this.scriptOf(req.rolloutId);
    if (!s) throw new EngineError(`no reference solution for rollout ${req.rolloutId}`);
    let e = this.engines.get(s.key);
    if (!e) this.engines.set(s.key, (e = new ScriptedEngine(s.turns, this.ctx)));
    const r = await e.generate(req);
    return { ...r, weightsVersion: "reference" };
  }
}
