/**
 * Engines. The openai-compatible engine is tested against a small fake inference server on
 * 127.0.0.1 that answers in vLLM's and llama-server's formats (no real model runs here).
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineError, type GenerateRequest } from "../../src/runtime/engines/engine.js";
import { createEngine } from "../../src/runtime/engines/registry.js";
import { pseudoLogprob } from "../../src/runtime/engines/scripted.js";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { accumulateChat, httpCall, parseSse, scriptedModel, TOOL_TURN } from "./helpers.js";

const IM_END = 151645;
const sampling = { temperature: 0.7, topP: 0.9, maxTokens: 64, stopIds: [IM_END] };
const req = (over: Partial<GenerateRequest> = {}): GenerateRequest => ({ promptIds: [1, 2, 3], sampling, rolloutId: "r", try: 1, seq: 0, ...over });

describe("scripted engine", () => {
  it("renders turns in the model's format, per rollout in order, with deterministic logprobs", async () => {
    const model = scriptedModel([TOOL_TURN, { text: "done" }]);
    const runtime = await loadModelRuntime(model);
    const engine = await createEngine(model.engine, { model, runtime });
    const a = await engine.generate(req({ rolloutId: "a" }));
    const b = await engine.generate(req({ rolloutId: "b" }));
    expect(a).toEqual(b);
    expect(a.ids.at(-1)).toBe(IM_END);
    expect(a.finish).toBe("stop");
    expect(runtime.parse(a.ids).parsed).toMatchObject({ reasoning: TOOL_TURN.reasoning, text: TOOL_TURN.text });
    expect(a.logprobs).toEqual(a.ids.map((id, pos) => pseudoLogprob(0, pos, id)));
    for (const lp of a.logprobs) expect(lp < 0 && lp > -3).toBe(true);
    const second = await engine.generate(req({ rolloutId: "a" }));
    expect(runtime.tokenizer.decode(second.ids)).toBe("done<|im_end|>");
    await expect(engine.generate(req({ rolloutId: "a" }))).rejects.toBeInstanceOf(EngineError);
  });

  it("gives a turn with `harnesses` only to rollouts of those harnesses", async () => {
    const model = scriptedModel([
      { text: "for claude", harnesses: ["claude-code"] },
      { text: "for the agent", harnesses: ["reins-agent", "codex"] },
      { text: "for all" },
    ]);
    const runtime = await loadModelRuntime(model);
    const engine = await createEngine(model.engine, { model, runtime });
    const texts = async (harness: string | undefined, rolloutId: string, n: number) => {
      const out: string[] = [];
      for (let i = 0; i < n; i++) out.push(runtime.tokenizer.decode((await engine.generate(req({ rolloutId, ...(harness ? { harness } : {}) }))).ids));
      return out;
    };
    expect(await texts("claude-code", "a", 2)).toEqual(["for claude<|im_end|>", "for all<|im_end|>"]);
    expect(await texts("codex", "b", 2)).toEqual(["for the agent<|im_end|>", "for all<|im_end|>"]);
    // A rollout whose harness the proxy did not name gets only the turns for every harness.
    expect(await texts(undefined, "c", 1)).toEqual(["for all<|im_end|>"]);
    await expect(engine.generate(req({ rolloutId: "a", harness: "claude-code" }))).rejects.toThrow(
      /the script has 2 turn\(s\) for claude-code and rollout a asked for turn 3/,
    );
  });

  it("truncates at maxTokens, streams the same ids in chunks", async () => {
    const model = scriptedModel([TOOL_TURN, TOOL_TURN]);
    const runtime = await loadModelRuntime(model);
    const engine = await createEngine(model.engine, { model, runtime });
    const cut = await engine.generate(req({ sampling: { ...sampling, maxTokens: 4 } }));
    expect(cut.ids).toHaveLength(4);
    expect(cut.finish).toBe("length");
    const chunks: number[][] = [];
    const full = await engine.generateStream!(req({ rolloutId: "s" }), (c) => chunks.push(c.ids));
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.flat()).toEqual(full.ids);
  });

  it("starts the script over for each try; a cut-stream turn breaks the stream after its tokens", async () => {
    const model = scriptedModel([{ ...TOOL_TURN, fault: "cut-stream" }, { text: "done" }]);
    const runtime = await loadModelRuntime(model);
    const engine = await createEngine(model.engine, { model, runtime });
    const chunks: number[][] = [];
    const cut = await engine.generateStream!(req({ rolloutId: "c" }), (c) => chunks.push(c.ids)).catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(EngineError);
    const { kind, partial, message } = cut as EngineError;
    expect(kind).toBe("stream-cut");
    expect(message).toMatch(/stream is cut/);
    expect(partial!.ids.length).toBeGreaterThan(0);
    expect(chunks.flat()).toEqual(partial!.ids);
    expect(runtime.parse(partial!.ids).parsed.toolCalls).toHaveLength(1);
    expect(runtime.tokenizer.decode((await engine.generate(req({ rolloutId: "c" }))).ids)).toBe("done<|im_end|>");
    // the second try of the same rollout replays from the first turn
    await expect(engine.generate(req({ rolloutId: "c", try: 2 }))).rejects.toMatchObject({ kind: "stream-cut" });
  });
});

interface Seen {
  url: string;
  body: any;
  auth?: string;
}

describe("openai-compatible engine (fake server on 127.0.0.1)", () => {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];
  let reply: (req: IncomingMessage, body: any) => { status?: number; json?: unknown; sse?: unknown[] } = () => ({ json: {} });
  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        seen.push({ url: req.url ?? "", body, ...(req.headers.authorization ? { auth: req.headers.authorization } : {}) });
        const out = reply(req, body);
        if (out.sse) {
          res.writeHead(200, { "content-type": "text/event-stream" });
          for (const e of out.sse) res.write(`data: ${typeof e === "string" ? e : JSON.stringify(e)}\n\n`);
          res.end();
          return;
        }
        res.writeHead(out.status ?? 200, { "content-type": "application/json" });
        res.end(JSON.stringify(out.json ?? {}));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const vllmChoice = (ids: number[], lps: number[], finish: string | null, extra: Record<string, unknown> = {}) => ({
    id: "cmpl-1",
    object: "text_completion",
    choices: [
      { index: 0, text: "", logprobs: { tokens: ids.map((i) => `token_id:${i}`), token_logprobs: lps, top_logprobs: null }, finish_reason: finish, ...extra },
    ],
  });

  it("vLLM /v1/completions: sends token ids and sampling, reads token_id:N tokens and logprobs", async () => {
    process.env.REINS_TEST_ENGINE_KEY = "sk-test";
    reply = () => ({ json: vllmChoice([9707, 1879, IM_END], [-0.1, -0.2, -0.3], "stop", { stop_reason: IM_END }) });
    const engine = await createEngine(
      { type: "openai-compatible", baseUrl: `${base}/v1`, model: "qwen3-0.6b", apiKeyEnv: "REINS_TEST_ENGINE_KEY" },
      { model: scriptedModel([]), runtime: await loadModelRuntime(scriptedModel([])) },
    );
    const out = await engine.generate(req({ sampling: { ...sampling, seed: 7 } }));
    expect(out).toEqual({ ids: [9707, 1879, IM_END], logprobs: [-0.1, -0.2, -0.3], finish: "stop", weightsVersion: "qwen3-0.6b" });
    const s = seen.at(-1)!;
    expect(s.url).toBe("/v1/completions");
    expect(s.auth).toBe("Bearer sk-test");
    expect(s.body).toMatchObject({
      model: "qwen3-0.6b",
      prompt: [1, 2, 3],
      max_tokens: 64,
      temperature: 0.7,
      top_p: 0.9,
      logprobs: 1,
      stop_token_ids: [IM_END],
      return_tokens_as_token_ids: true,
      seed: 7,
    });
  });

  it("appends the stop token a server left out, prefers token_ids, maps length", async () => {
    reply = () => ({ json: vllmChoice([5, 6], [-1, -2], "stop", { token_ids: [9707, 1879] }) });
    const engine = await createEngine(
      { type: "openai-compatible", baseUrl: base, model: "m" },
      { model: scriptedModel([]), runtime: await loadModelRuntime(scriptedModel([])) },
    );
    expect(await engine.generate(req())).toMatchObject({ ids: [9707, 1879, IM_END], logprobs: [-1, -2, 0], finish: "stop" });
    expect(seen.at(-1)!.url).toBe("/v1/completions");
    reply = () => ({ json: vllmChoice([9707, 1879], [-1, -2], "length") });
    expect(await engine.generate(req())).toMatchObject({ ids: [9707, 1879], finish: "length" });
  });

  it("streams vLLM chunks", async () => {
    reply = () => ({ sse: [vllmChoice([9707], [-0.5], null), vllmChoice([1879], [-0.25], null), vllmChoice([IM_END], [-0.125], "stop"), "[DONE]"] });
    const engine = await createEngine(
      { type: "openai-compatible", baseUrl: `${base}/v1`, model: "m" },
      { model: scriptedModel([]), runtime: await loadModelRuntime(scriptedModel([])) },
    );
    const got: number[][] = [];
    const out = await engine.generateStream!(req(), (c) => got.push(c.ids));
    expect(got).toEqual([[9707], [1879], [IM_END]]);
    expect(out).toMatchObject({ ids: [9707, 1879, IM_END], logprobs: [-0.5, -0.25, -0.125], finish: "stop" });
    expect(seen.at(-1)!.body.stream).toBe(true);
  });

  it("llama-server /completion: token-id prompt, n_probs, ids from tokens, EOS appended", async () => {
    reply = () => ({
      json: {
        content: "Hello world",
        tokens: [9707, 1879],
        completion_probabilities: [
          { id: 9707, logprob: -0.5 },
          { id: 1879, logprob: -0.75 },
        ],
        stop: true,
        stop_type: "eos",
      },
    });
    const engine = await createEngine(
      { type: "openai-compatible", baseUrl: `${base}/v1`, model: "m", api: "llama-server" },
      { model: scriptedModel([]), runtime: await loadModelRuntime(scriptedModel([])) },
    );
    expect(await engine.generate(req())).toMatchObject({ ids: [9707, 1879, IM_END], logprobs: [-0.5, -0.75, 0], finish: "stop" });
    expect(seen.at(-1)!.url).toBe("/completion");
    expect(seen.at(-1)!.body).toMatchObject({ prompt: [1, 2, 3], n_predict: 64, n_probs: 1, return_tokens: true });
    reply = () => ({ json: { tokens: [9707], completion_probabilities: [{ id: 9707, logprob: -0.5 }], stop: true, stop_type: "limit" } });
    expect(await engine.generate(req())).toMatchObject({ ids: [9707], finish: "length" });
  });

  it("reports HTTP errors, bad bodies and unreachable servers as EngineError", async () => {
    const ctx = { model: scriptedModel([]), runtime: await loadModelRuntime(scriptedModel([])) };
    reply = () => ({ status: 503, json: { error: "overloaded" } });
    const engine = await createEngine({ type: "openai-compatible", baseUrl: base, model: "m" }, ctx);
    await expect(engine.generate(req())).rejects.toMatchObject({ name: "EngineError", kind: "failed" });
    reply = () => ({ json: { choices: [{ text: "hi", logprobs: { tokens: ["hi"], token_logprobs: [-1] }, finish_reason: "stop" }] } });
    await expect(engine.generate(req())).rejects.toMatchObject({ kind: "bad-response" });
    const dead = await createEngine({ type: "openai-compatible", baseUrl: "http://127.0.0.1:9", model: "m" }, ctx);
    await expect(dead.generate(req())).rejects.toMatchObject({ kind: "unreachable" });
  });

  it("serves a harness end to end through the proxy", async () => {
    reply = (_req, body) => {
      expect(Array.isArray(body.prompt)).toBe(true);
      return { sse: [vllmChoice([9707, 1879], [-0.5, -0.5], null), vllmChoice([IM_END], [-0.1], "stop"), "[DONE]"] };
    };
    const model = scriptedModel([], { engine: { type: "openai-compatible", baseUrl: `${base}/v1`, model: "m" } });
    const proxy = await startProxy({ model });
    try {
      const r = proxy.registerRollout("e2e");
      const out = await httpCall(`${r.baseUrl}/v1/chat/completions`, {
        body: { model: "m", stream: true, messages: [{ role: "user", content: "hi" }] },
        headers: { authorization: `Bearer ${r.apiKey}` },
      });
      expect(accumulateChat(parseSse(out.text)).content).toBe("Hello world");
      const rec = proxy.records("e2e")[0]!;
      expect(rec.completionIds).toEqual([9707, 1879, IM_END]);
      expect(seen.at(-1)!.body.prompt).toEqual(rec.promptIds);
      expect(rec.weightsVersion).toBe("m");
    } finally {
      await proxy.close();
    }
  });
});
