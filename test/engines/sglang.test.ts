/**
 * The sglang engine against a replay of SGLang's native server (test/fixtures/engines/sglang/,
 * written from its documented protocol): the probe, the exact /generate request, ids and logprobs
 * from meta_info.output_token_logprobs, streams that repeat the output so far or carry only new
 * tokens, the weights version the server reports, and reload through /update_weights_from_disk.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ResolvedEngine } from "../../src/compiler/contract/plan.js";
import { EngineError, type EngineContext, type GenerateRequest } from "../../src/runtime/engines/engine.js";
import { createEngine } from "../../src/runtime/engines/registry.js";
import { posts, readFixture, startReplay, type Replay } from "./replay.js";

const fx = readFixture("sglang/sglang-0.5-documented.json");
const noCtx = {} as EngineContext;
const spec = (url: string, over: Partial<Extract<ResolvedEngine, { type: "sglang" }>> = {}): ResolvedEngine => ({
  type: "sglang",
  baseUrl: url,
  model: "Qwen/Qwen3-0.6B",
  ...over,
});
const req = (over: Partial<GenerateRequest["sampling"]> = {}): GenerateRequest => ({
  promptIds: [1, 2, 3],
  sampling: { temperature: 1, topP: 1, maxTokens: 3, stopIds: [151645], ...over },
  rolloutId: "r",
  try: 1,
  seq: 0,
});
const IDS = [151, 9, 151645];
const LPS = [-0.6931471824645996, -1.3862943649291992, -0.10536051541566849];

let replay: Replay | undefined;
afterEach(async () => {
  await replay?.close();
  replay = undefined;
});

async function serve(events: unknown[] = fx.stream.events): Promise<Replay> {
  replay = await startReplay(fx.probe);
  let reloaded = false;
  replay.answer = (path, body) => {
    if (path === "/generate") return body.stream ? { sse: events } : { json: reloaded ? fx.afterReload : fx.completion.response };
    if (path === "/update_weights_from_disk") {
      reloaded = true;
      return { json: fx.reload[0].response };
    }
    return undefined;
  };
  return replay;
}

describe("sglang engine (replayed SGLang 0.5)", () => {
  it("probes the server: SGLang 0.5.5, temperature-scaled logprobs by default, the disk reload route, its context length, its model path", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    expect(engine.info!()).toEqual({
      type: "sglang",
      server: "sglang",
      version: "0.5.5",
      logprobsMode: "temperature",
      logprobsModeFrom: "default",
      routes: {
        generate: "/generate",
        reload: "/update_weights_from_disk",
        pause: "/pause_generation",
        resume: "/continue_generation",
        resetCache: "/flush_cache",
      },
      maxModelLen: 40960,
      modelPath: "Qwen/Qwen3-0.6B",
    });
    const raw = await createEngine(spec(r.url, { logprobsMode: "raw" }), noCtx);
    expect(raw.info!()).toMatchObject({ logprobsMode: "raw", logprobsModeFrom: "spec" });
  });

  it("sends input_ids with every sampler set and return_logprob; reads [logprob, id, text] entries, the stop and the server's weight version", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    const out = await engine.generate(req({ seed: 7 }));
    expect(posts(r)).toEqual([{ path: "/generate", body: fx.completion.request }]);
    expect(out).toEqual({ ids: IDS, logprobs: LPS, finish: "stop", weightsVersion: "default" });
  });

  it("streams the same deltas whether events repeat the whole output so far (default) or carry only new tokens", async () => {
    for (const events of [fx.stream.events, fx.stream.incrementalEvents]) {
      const r = await serve(events);
      const engine = await createEngine(spec(r.url), noCtx);
      const chunks: number[][] = [];
      const out = await engine.generateStream!(req(), (c) => chunks.push(c.ids));
      expect(posts(r)).toEqual([{ path: "/generate", body: fx.stream.request }]);
      expect(chunks).toEqual([[151], [9], [151645]]);
      expect(out).toEqual({ ids: IDS, logprobs: LPS, finish: "stop", weightsVersion: "default" });
      await r.close();
      replay = undefined;
    }
  });

  it("reloads from the trainer's directory with the new weight version, without pausing; the server's version labels later calls", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    await engine.reload!("step-1", "/weights/step-1");
    expect(posts(r)).toEqual([{ path: "/update_weights_from_disk", body: fx.reload[0].request }]);
    expect((await engine.generate(req())).weightsVersion).toBe("step-1");
  });

  it("a reload the server reports as failed is an EngineError with its message", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    r.answer = () => ({ json: fx.reloadFailed });
    const err = await engine.reload!("step-1", "/weights/step-1").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as Error).message).toMatch(/could not load \/weights\/step-1: Failed to get weights iterator/);
  });

  it("an aborted call is an engine failure, not a completion; a malformed entry is a bad response", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    r.answer = () => ({ json: fx.abort });
    await expect(engine.generate(req())).rejects.toMatchObject({
      code: "EngineFailed",
      message: expect.stringMatching(/aborted the call: .*updating weights/),
    });
    r.answer = () => ({
      json: { ...fx.completion.response, meta_info: { ...fx.completion.response.meta_info, output_token_logprobs: [[-0.5, "151", null]] } },
    });
    await expect(engine.generate(req())).rejects.toMatchObject({ code: "EngineBadResponse" });
  });

  it("a vLLM server where the spec says sglang is refused", async () => {
    replay = await startReplay(readFixture("vllm/vllm-0.32.0.json").probe);
    await expect(createEngine(spec(replay.url), noCtx)).rejects.toMatchObject({
      code: "EngineMismatch",
      message: expect.stringMatching(/engine is sglang, but a vllm server answers there/),
    });
  });
});
