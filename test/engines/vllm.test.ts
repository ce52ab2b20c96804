/**
 * The vllm engine against a replay of vLLM 0.32.0 (test/fixtures/engines/vllm/vllm-0.32.0.json,
 * bodies as measured on CPU): what it probes at start, the exact completion request it sends,
 * how it reads ids, logprobs and finish (whole and streamed), and the reload call sequence,
 * resume included when the reload fails.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ResolvedEngine } from "../../src/compiler/contract/plan.js";
import { ReinsError } from "../../src/compiler/contract/problem.js";
import { EngineError, type EngineContext, type GenerateRequest } from "../../src/runtime/engines/engine.js";
import { createEngine } from "../../src/runtime/engines/registry.js";
import { posts, readFixture, startReplay, type Replay } from "./replay.js";

const fx = readFixture("vllm/vllm-0.32.0.json");
const noCtx = {} as EngineContext;
const spec = (url: string, over: Partial<Extract<ResolvedEngine, { type: "vllm" }>> = {}): ResolvedEngine => ({
  type: "vllm",
  baseUrl: `${url}/v1`,
  model: "tiny/qwen3_hd32",
  ...over,
});
const req = (over: Partial<GenerateRequest["sampling"]>): GenerateRequest => ({
  promptIds: [1, 2, 3],
  sampling: { temperature: 1, topP: 1, maxTokens: 2, stopIds: [2], ...over },
  rolloutId: "r",
  try: 1,
  seq: 0,
});

let replay: Replay | undefined;
afterEach(async () => {
  await replay?.close();
  replay = undefined;
});

async function serve(probe: Record<string, unknown> = fx.probe): Promise<Replay> {
  replay = await startReplay(probe);
  replay.answer = (path, body) => {
    if (path === "/v1/completions") return body.stream ? { sse: fx.stream.events } : { json: fx.completion.response };
    const step = (fx.reload as { path: string; response: unknown }[]).find((s) => s.path === path);
    return step ? { json: step.response } : undefined;
  };
  return replay;
}

describe("vllm engine (replayed vLLM 0.32.0)", () => {
  it("probes the server at start: vLLM 0.32.0, raw logprobs as its /server_info says, the reload routes, 2048 tokens, the model directory it loaded", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    expect(engine.info!()).toEqual({
      type: "vllm",
      server: "vllm",
      version: "0.32.0",
      logprobsMode: "raw",
      logprobsModeFrom: "server",
      routes: {
        generate: "/v1/completions",
        reload: "/collective_rpc",
        pause: "/pause",
        resume: "/resume",
        resetCache: "/reset_prefix_cache",
        updateVersion: "/update_weight_version",
      },
      maxModelLen: 2048,
      modelPath: "tiny/qwen3_hd32",
    });
    expect(
      r.seen
        .filter((s) => s.method === "GET")
        .map((s) => s.path)
        .sort(),
    ).toEqual(["/get_model_info", "/get_server_info", "/openapi.json", "/props", "/server_info?config_format=json", "/v1/models", "/version"].sort());
  });

  it("without dev mode (no /server_info): the spec's logprobsMode, else vLLM's default raw; no reload routes, so reload says how to get them", async () => {
    const { "/server_info?config_format=json": _, ...plain } = fx.probe;
    const paths = Object.fromEntries(
      Object.entries(fx.probe["/openapi.json"].paths).filter(([p]) => ["/v1/completions", "/v1/models", "/version", "/health"].includes(p)),
    );
    const r = await serve({ ...plain, "/openapi.json": { paths } });
    const asserted = await createEngine(spec(r.url, { logprobsMode: "processed" }), noCtx);
    expect(asserted.info!()).toMatchObject({ server: "vllm", logprobsMode: "processed", logprobsModeFrom: "spec", routes: { generate: "/v1/completions" } });
    const plainEngine = await createEngine(spec(r.url), noCtx);
    expect(plainEngine.info!()).toMatchObject({ logprobsMode: "raw", logprobsModeFrom: "default" });
    const err = await plainEngine.reload!("step-1", "/weights/step-1").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as Error).message).toMatch(/VLLM_SERVER_DEV_MODE=1/);
    expect(posts(r)).toEqual([]);
  });

  it("a spec asserting another mode than the server reports is refused", async () => {
    const r = await serve();
    const err = await createEngine(spec(r.url, { logprobsMode: "processed" }), noCtx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReinsError);
    expect(err).toMatchObject({ code: "EngineMismatch" });
    expect((err as Error).message).toMatch(/says the server returns processed logprobs, but the vllm server reports raw/);
  });

  it("sends the token-id prompt with every sampler set and the logprob flags; reads ids, logprobs and finish", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    const out = await engine.generate(req({ seed: 0 }));
    expect(posts(r)).toEqual([{ path: "/v1/completions", body: fx.completion.request }]);
    expect(out).toEqual({ ids: [43, 53], logprobs: [-5.234918594360352, -5.251516342163086], finish: "length", weightsVersion: "tiny/qwen3_hd32" });
  });

  it("streams token by token: each event's token_ids delta, the stop token kept, the same result as a whole", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    const chunks: { ids: number[]; logprobs: number[] }[] = [];
    const out = await engine.generateStream!(req({ maxTokens: 8 }), (c) => chunks.push(c));
    expect(posts(r)).toEqual([{ path: "/v1/completions", body: fx.stream.request }]);
    expect(chunks).toEqual([
      { ids: [297], logprobs: [-6.082244396209717] },
      { ids: [93], logprobs: [-5.792168140411377] },
      { ids: [2], logprobs: [-4.51171875] },
    ]);
    expect(out).toEqual({
      ids: [297, 93, 2],
      logprobs: [-6.082244396209717, -5.792168140411377, -4.51171875],
      finish: "stop",
      weightsVersion: "tiny/qwen3_hd32",
    });
  });

  it("reloads through pause (waiting for in-flight calls), collective_rpc reload_weights, reset_prefix_cache, update_weight_version and resume; later calls carry the new version", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    await engine.reload!("step-1", "/weights/step-1");
    expect(posts(r)).toEqual((fx.reload as { path: string; request: unknown }[]).map(({ path, request }) => ({ path, body: request })));
    expect((await engine.generate(req({}))).weightsVersion).toBe("step-1");
  });

  it("a call made while a reload is under way waits for it and carries the new version", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    const answer = r.answer;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    r.answer = async (path, body) => {
      if (path === "/collective_rpc") await held;
      return answer(path, body);
    };
    const reloading = engine.reload!("step-1", "/weights/step-1");
    while (!posts(r).some((p) => p.path === "/collective_rpc")) await new Promise((t) => setTimeout(t, 5));
    const during = engine.generate(req({}));
    await new Promise((t) => setTimeout(t, 50));
    expect(posts(r).map((p) => p.path)).toEqual(["/pause?mode=wait", "/collective_rpc"]);
    release();
    await reloading;
    expect((await during).weightsVersion).toBe("step-1");
    expect(posts(r).map((p) => p.path)).toEqual([
      "/pause?mode=wait",
      "/collective_rpc",
      "/reset_prefix_cache",
      "/update_weight_version",
      "/resume",
      "/v1/completions",
    ]);
  });

  it("a failed reload still resumes the server, fails with the server's answer, and keeps the old version", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    const answer = r.answer;
    r.answer = (path, body) =>
      path === "/collective_rpc" ? { status: 500, json: { error: { message: "Worker failed: no safetensors in /weights/step-1" } } } : answer(path, body);
    const err = await engine.reload!("step-1", "/weights/step-1").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as Error).message).toMatch(/HTTP 500.*no safetensors/);
    expect(posts(r).map((p) => p.path)).toEqual(["/pause?mode=wait", "/collective_rpc", "/resume"]);
    expect((await engine.generate(req({}))).weightsVersion).toBe("tiny/qwen3_hd32");
  });

  it("a misread field fails loudly: a token that is not token_id:N, an answer without ids", async () => {
    const r = await serve();
    const engine = await createEngine(spec(r.url), noCtx);
    const choice = fx.completion.response.choices[0];
    r.answer = () => ({
      json: { ...fx.completion.response, choices: [{ ...choice, token_ids: undefined, logprobs: { ...choice.logprobs, tokens: ["I", "S"] } }] },
    });
    await expect(engine.generate(req({}))).rejects.toMatchObject({ code: "EngineBadResponse", message: expect.stringMatching(/token_id:N/) });
    r.answer = () => ({ json: { choices: [] } });
    await expect(engine.generate(req({}))).rejects.toMatchObject({ code: "EngineBadResponse" });
  });

  it("another server at baseUrl is an EngineMismatch; nothing listening is EngineUnreachable", async () => {
    const sglang = readFixture("sglang/sglang-0.5-documented.json");
    const r = await serve(sglang.probe);
    await expect(createEngine(spec(r.url), noCtx)).rejects.toMatchObject({
      code: "EngineMismatch",
      message: expect.stringMatching(/engine is vllm, but a sglang server answers there/),
    });
    const url = r.url;
    await r.close();
    replay = undefined;
    await expect(createEngine(spec(url), noCtx)).rejects.toMatchObject({
      code: "EngineUnreachable",
      message: expect.stringMatching(/cannot reach the inference server/),
    });
  });
});
