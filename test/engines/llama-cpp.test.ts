/**
 * The llama-cpp engine against a replay of llama-server (test/fixtures/engines/llama.cpp/,
 * written from its documented /completion protocol): every sampler is sent (its defaults are not
 * neutral), logprobs are the post-sampling probabilities of the sampled tokens, and it refuses
 * to reload weights.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ResolvedEngine } from "../../src/compiler/contract/plan.js";
import { EngineError, type EngineContext, type GenerateRequest } from "../../src/runtime/engines/engine.js";
import { createEngine } from "../../src/runtime/engines/registry.js";
import { posts, readFixture, startReplay, type Replay } from "./replay.js";

const fx = readFixture("llama.cpp/llama.cpp-b6527-documented.json");
const noCtx = {} as EngineContext;
const spec = (url: string): ResolvedEngine => ({ type: "llama-cpp", baseUrl: url });
const req = (over: Partial<GenerateRequest["sampling"]> = {}): GenerateRequest => ({
  promptIds: [1, 2, 3],
  sampling: { temperature: 1, topP: 1, maxTokens: 8, stopIds: [151645], ...over },
  rolloutId: "r",
  try: 1,
  seq: 0,
});

let replay: Replay | undefined;
afterEach(async () => {
  await replay?.close();
  replay = undefined;
});

async function serve(): Promise<Replay> {
  replay = await startReplay(fx.probe);
  replay.answer = (path, body) => (path === "/completion" ? (body.stream ? { sse: fx.stream.events } : { json: fx.completion.response }) : undefined);
  return replay;
}

describe("llama-cpp engine (replayed llama-server)", () => {
  it("probes /props: llama.cpp, its build, post-sampling logprobs, its context", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    expect(engine.info!()).toEqual({
      type: "llama-cpp",
      server: "llama.cpp",
      version: "b6527-7c0e9d8a",
      logprobsMode: "processed",
      logprobsModeFrom: "default",
      routes: { generate: "/completion" },
      maxModelLen: 4096,
    });
  });

  it("overrides every default sampler and asks for post-sampling probabilities; logprobs are their logs", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    const out = await engine.generate(req({ temperature: 0.7, topP: 0.9, maxTokens: 2, seed: 3 }));
    expect(posts(r)).toEqual([{ path: "/completion", body: fx.completion.request }]);
    expect(out).toEqual({ ids: [151, 9], logprobs: [Math.log(0.5), Math.log(0.25)], finish: "length", weightsVersion: "llama.cpp" });
  });

  it("streams token by token; an end on EOS that the server leaves out gets the stop id appended", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    const chunks: number[][] = [];
    const out = await engine.generateStream!(req(), (c) => chunks.push(c.ids));
    expect(posts(r)).toEqual([{ path: "/completion", body: fx.stream.request }]);
    expect(chunks).toEqual([[151], [9]]);
    expect(out).toEqual({ ids: [151, 9, 151645], logprobs: [Math.log(0.5), Math.log(0.25), 0], finish: "stop", weightsVersion: "llama.cpp" });
  });

  it("refuses raw logprobs (a server without post_sampling_probs) and probabilities of another token", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    const [a, b] = fx.completion.response.completion_probabilities;
    r.answer = () => ({ json: { ...fx.completion.response, completion_probabilities: [{ id: 151, logprob: -0.69 }, b] } });
    await expect(engine.generate(req())).rejects.toMatchObject({ code: "EngineBadResponse", message: expect.stringMatching(/post_sampling_probs/) });
    r.answer = () => ({ json: { ...fx.completion.response, completion_probabilities: [b, a] } });
    await expect(engine.generate(req())).rejects.toMatchObject({ code: "EngineBadResponse", message: expect.stringMatching(/not the sampled 151/) });
  });

  it("cannot reload weights: a clear error that says what to train with, and nothing is sent", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    const err = await engine.reload!("step-1", "/weights/step-1").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as Error).message).toMatch(/cannot load new weights.*vllm or sglang/);
    expect(posts(r)).toEqual([]);
  });
});
