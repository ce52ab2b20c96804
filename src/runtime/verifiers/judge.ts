/**
 * The rubric judge: a prompt in, the judge's text out, each call recorded. `judgeFromFunction`
 * wraps any `(prompt) => Promise<string>` (tests, external services); `createEngineJudge` renders
 * the prompt with the judge model's chat template, tokenizes it, and asks an Engine by token ids,
 * producing a CallRecord like any proxied call (call class "auxiliary"); `createHostedJudge` asks
 * a hosted model in text (no token ids, so no record).
 */
import type { ResolvedHostedApi } from "../../compiler/contract/plan.js";
import type { Engine, SamplingParams } from "../engines/engine.js";
import { askHostedText } from "../engines/hosted-api.js";
import type { ModelRuntime } from "../model/model-runtime.js";
import { CALL_RECORD_VERSION, type CallRecord } from "../records/index.js";

export interface JudgeRequest {
  system: string;
  prompt: string;
  /** Rollout the verification belongs to, e.g. "3-1-0"; judge records use "<rollout>/judge". */
  rollout: string;
  /** The judge Model the rubric names (a run's judges route on it; a single judge ignores it). */
  judge?: string;
  seq: number;
  signal?: AbortSignal;
}

export interface JudgeReply {
  text: string;
  /** The engine call, when the judge went through one. */
  record?: CallRecord;
}

export interface Judge {
  /** Model name for reports. */
  readonly name: string;
  ask(req: JudgeRequest): Promise<JudgeReply>;
}

/** A judge from a plain function of the full prompt text. */
export function judgeFromFunction(fn: (prompt: string) => Promise<string>, name = "function"): Judge {
  return {
    name,
    async ask(req) {
      return { text: await fn(`${req.system}\n\n${req.prompt}`) };
    },
  };
}

export interface EngineJudgeOptions {
  runtime: ModelRuntime;
  engine: Engine;
  /** Default: the model's sampling with temperature 0 and at most 1024 new tokens. */
  sampling?: Partial<Omit<SamplingParams, "stopIds">>;
}

export function createEngineJudge(opts: EngineJudgeOptions): Judge {
  const { runtime, engine } = opts;
  const model = runtime.model;
  return {
    name: model.name,
    async ask(req) {
      const text = runtime.template.render(
        [
          { role: "system", content: req.system },
          { role: "user", content: req.prompt },
        ],
        undefined,
        true,
      );
      const promptIds = runtime.tokenizer.encode(text);
      const sampling: SamplingParams = {
        temperature: opts.sampling?.temperature ?? 0,
        topP: opts.sampling?.topP ?? model.sampling.topP,
        maxTokens: opts.sampling?.maxTokens ?? Math.min(1024, model.sampling.maxTokens),
        stopIds: runtime.stopIds,
        ...(opts.sampling?.seed !== undefined ? { seed: opts.sampling.seed } : {}),
      };
      const rolloutId = `${req.rollout}/judge`;
      const receivedMs = Date.now();
      const result = await engine.generate({ promptIds, sampling, rolloutId, try: 1, seq: req.seq, ...(req.signal ? { signal: req.signal } : {}) });
      const { raw, parsed } = runtime.parse(result.ids);
      const record: CallRecord = {
        v: CALL_RECORD_VERSION,
        rolloutId,
        try: 1,
        seq: req.seq,
        dialect: "openai-chat",
        model: model.name,
        stream: false,
        promptIds,
        completionIds: result.ids,
        completionLogprobs: result.logprobs,
        finishReason: result.finish,
        parse: parsed.error ? { ok: false, error: parsed.error, ...(parsed.detail ? { detail: parsed.detail } : {}) } : { ok: true },
        callClass: "auxiliary",
        reused: [],
        tokenizedPromptTokens: promptIds.length,
        weightsVersion: result.weightsVersion,
        timings: { receivedMs, doneMs: Date.now() },
      };
      return { text: parsed.text || raw, record };
    },
  };
}

/** A judge behind a hosted API: temperature 0 and at most `maxTokens` (default 1024) new tokens unless given. */
export function createHostedJudge(name: string, api: ResolvedHostedApi, o: { maxTokens?: number; temperature?: number; env?: NodeJS.ProcessEnv } = {}): Judge {
  return {
    name,
    async ask(req) {
      const text = await askHostedText(
        api,
        { system: req.system, user: req.prompt, maxTokens: o.maxTokens ?? 1024, temperature: o.temperature ?? 0 },
        o.env ?? process.env,
        req.signal,
      );
      return { text };
    },
  };
}
