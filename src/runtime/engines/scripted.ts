/**
 * The scripted engine: deterministic turns from the Model spec, consumed per rollout in order.
 * Each turn is written in the model's output format and tokenized with the real tokenizer, so
 * every downstream stage (parsing, dialects, TITO, trajectories) runs on real token ids.
 * Logprobs are pseudo-values from a hash of (turn, position, token): deterministic, in (-3, 0).
 * Each try of a rollout starts the script from its first turn. A turn with `harnesses` is given
 * only to rollouts of those harnesses (the proxy tells the engine each rollout's harness), so one
 * script can speak each harness's own tool names. A turn may fail on purpose:
 * `fault: engine-error` throws an EngineError; `fault: cut-stream` produces the turn and then
 * breaks its stream (EngineError "stream-cut" carrying the turn as the partial result).
 */
import type { ResolvedEngine, ScriptedTurn } from "../../compiler/contract/plan.js";
import { renderTurn } from "../model/output-format.js";
import { type Engine, type EngineContext, EngineError, type EngineFactory, type GenerateChunk, type GenerateRequest, type GenerateResult } from "./engine.js";

type ScriptedSpec = Extract<ResolvedEngine, { type: "scripted" }>;

const STREAM_CHUNK_TOKENS = 8;

export const createScriptedEngine: EngineFactory<ScriptedSpec> = async (spec, ctx) => new ScriptedEngine(spec.script, ctx);

export class ScriptedEngine implements Engine {
  readonly type = "scripted";
  private readonly next = new Map<string, number>();
  private readonly byHarness = new Map<string, ScriptedTurn[]>();
  private readonly tokenized = new WeakMap<ScriptedTurn, readonly number[]>();

  constructor(
    private readonly script: ScriptedTurn[],
    private readonly ctx: EngineContext,
  ) {}

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    return this.produceOrThrow(req);
  }

  async generateStream(req: GenerateRequest, onChunk: (c: GenerateChunk) => void): Promise<GenerateResult> {
    const { result, cut } = this.produce(req);
    for (let i = 0; i < result.ids.length; i += STREAM_CHUNK_TOKENS) {
      if (req.signal?.aborted) throw new EngineError("generation aborted", "failed");
      onChunk({ ids: result.ids.slice(i, i + STREAM_CHUNK_TOKENS), logprobs: result.logprobs.slice(i, i + STREAM_CHUNK_TOKENS) });
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (cut) throw cut;
    return result;
  }

  /** The turns a rollout of `harness` is given: those without `harnesses`, and those naming it. */
  private scriptFor(harness: string | undefined): ScriptedTurn[] {
    let turns = this.byHarness.get(harness ?? "");
    if (!turns) {
      turns = this.script.filter((t) => !t.harnesses || (harness !== undefined && t.harnesses.includes(harness)));
      this.byHarness.set(harness ?? "", turns);
    }
    return turns;
  }

  /** Turns a rollout's try has consumed so far. */
  consumed(rolloutId: string, tryNumber = 1): number {
    return this.next.get(scriptKey(rolloutId, tryNumber)) ?? 0;
  }

  private produceOrThrow(req: GenerateRequest): GenerateResult {
    const { result, cut } = this.produce(req);
    if (cut) throw cut;
    return result;
  }

  /** A turn written in the output format and tokenized, once per turn (the same text each time). */
  private idsOf(turn: ScriptedTurn): readonly number[] {
    let ids = this.tokenized.get(turn);
    if (!ids) {
      ids = this.ctx.runtime.tokenizer.encode(turn.raw ?? renderTurn(turn, this.ctx.runtime.format));
      this.tokenized.set(turn, ids);
    }
    return ids;
  }

  /** The next turn of the request's try, and the error that breaks its stream (cut-stream turns). */
  private produce(req: GenerateRequest): { result: GenerateResult; cut?: EngineError } {
    const key = scriptKey(req.rolloutId, req.try);
    const index = this.next.get(key) ?? 0;
    const script = this.scriptFor(req.harness);
    const turn = script[index];
    if (!turn) {
      const whose = req.harness !== undefined && script.length < this.script.length ? ` for ${req.harness}` : "";
      throw new EngineError(
        `scripted engine: the script has ${script.length} turn(s)${whose} and rollout ${req.rolloutId} asked for turn ${index + 1}`,
        "failed",
      );
    }
    this.next.set(key, index + 1);
    if (turn.fault === "engine-error") throw new EngineError(`scripted fault: engine error on turn ${index + 1}`, "failed");
    const { runtime } = this.ctx;
    let ids = [...this.idsOf(turn)];
    let finish: GenerateResult["finish"] = turn.finish === "length" ? "length" : "stop";
    if (finish === "stop" && runtime.stopIds.length > 0) ids.push(runtime.stopIds[0]!);
    const limit = Math.max(1, req.sampling.maxTokens);
    if (ids.length > limit) {
      ids = ids.slice(0, limit);
      finish = "length";
    }
    const result: GenerateResult = {
      ids,
      logprobs: ids.map((id, pos) => pseudoLogprob(index, pos, id)),
      finish,
      weightsVersion: "scripted",
    };
    if (turn.fault !== "cut-stream") return { result };
    return { result, cut: new EngineError(`scripted fault: the stream is cut after turn ${index + 1} (cut-stream)`, "stream-cut", result) };
  }
}

function scriptKey(rolloutId: string, tryNumber: number): string {
  return JSON.stringify([rolloutId, tryNumber]);
}

/** A deterministic value in (-3, 0) from (turn, position, token id). */
export function pseudoLogprob(turn: number, pos: number, id: number): number {
  const h = mix(mix(0x811c9dc5 ^ turn, pos), id);
  const unit = ((h >>> 0) % 1_000_000) / 1_000_000;
  return -(0.001 + unit * 2.998);
}

function mix(h: number, v: number): number {
  h = Math.imul(h ^ v, 0x01000193);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  return h ^ (h >>> 12);
}
