import { request } from "node:http";
import { describe, expect, it } from "vitest";
import type { Engine, GenerateRequest, GenerateResult } from "../../src/runtime/engines/engine.js";
import { EngineError } from "../../src/runtime/engines/engine.js";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import type { CallRecord } from "../../src/runtime/records/index.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { accumulateAnthropic, accumulateResponses, httpCall, parseSse, scriptedModel, TOOL_TURN, WRITE_TOOL_SCHEMA } from "./helpers.js";

const anthropicBody = {
  model: "claude-sonnet-4-5",
  max_tokens: 1000,
  stream: true,
  thinking: { type: "enabled", budget_tokens: 500 },
  tools: [{ name: "Write", input_schema: WRITE_TOOL_SCHEMA }],
  messages: [{ role: "user", content: "Create hello.txt containing hi" }],
};
const chatBody = {
  model: "m",
  tools: [{ type: "function", function: { name: "Write", parameters: WRITE_TOOL_SCHEMA } }],
  messages: [{ role: "user", content: "Create hello.txt" }],
};

describe("faults", () => {
  it("engine error → 5xx in the dialect's shape, recorded; the identical retry succeeds", async () => {
    const proxy = await startProxy({ model: scriptedModel([{ fault: "engine-error" }, { text: "recovered" }, { fault: "engine-error" }]) });
    try {
      const r = proxy.registerRollout("f-engine");
      const h = { authorization: `Bearer ${r.apiKey}` };
      const first = await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: chatBody, headers: h });
      expect(first.status).toBe(500);
      expect(JSON.parse(first.text).error).toMatchObject({ type: "server_error", message: expect.stringContaining("engine error") });
      const retry = await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: chatBody, headers: h });
      expect(JSON.parse(retry.text).choices[0].message.content).toBe("recovered");
      const anth = await httpCall(`${r.baseUrl}/v1/messages`, { body: anthropicBody, headers: { "x-api-key": r.apiKey } });
      expect(anth.status).toBe(500);
      expect(JSON.parse(anth.text)).toMatchObject({ type: "error", error: { type: "api_error" } });
      const recs = proxy.records("f-engine");
      expect(recs.map((x) => [x.finishReason, x.error?.kind])).toEqual([
        ["error", "engine"],
        ["stop", undefined],
        ["error", "engine"],
      ]);
      expect(recs[0]!.promptIds).toEqual(recs[1]!.promptIds);
      expect(recs[0]!.completionIds).toEqual([]);
      // script exhausted: a clear engine error, not a hang
      const over = await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: chatBody, headers: h });
      expect(over.status).toBe(500);
      expect(JSON.parse(over.text).error.message).toMatch(/script has 3 turn\(s\)/);
    } finally {
      await proxy.close();
    }
  });

  it("cut stream mid tool call: the client sees a broken stream, the record says so, the harness's recovery call works", async () => {
    const model = scriptedModel([
      { ...TOOL_TURN, fault: "cut-stream" },
      TOOL_TURN,
      { ...TOOL_TURN, fault: "cut-stream" },
      { ...TOOL_TURN, fault: "cut-stream" },
    ]);
    const rt = await loadModelRuntime(model);
    const proxy = await startProxy({ model });
    try {
      const r = proxy.registerRollout("f-cut");
      const reply = await httpCall(`${r.baseUrl}/v1/messages`, { body: anthropicBody, headers: { "x-api-key": r.apiKey } });
      expect(reply.cut).toBe(true);
      const events = parseSse(reply.text);
      expect(events.some((e) => e.json?.delta?.type === "input_json_delta")).toBe(true);
      expect(events.some((e) => e.event === "message_stop")).toBe(false);
      const { message } = accumulateAnthropic(events);
      // Claude Code keeps the finished blocks, drops the partial tool_use and asks to resume
      const kept = message.content.filter((b: any) => b.type !== "tool_use");
      const retry = await httpCall(`${r.baseUrl}/v1/messages`, {
        body: {
          ...anthropicBody,
          messages: [
            ...anthropicBody.messages,
            { role: "assistant", content: kept },
            { role: "user", content: "<system-reminder>\nYour response above was cut off mid-stream.\n</system-reminder>" },
          ],
        },
        headers: { "x-api-key": r.apiKey },
      });
      expect(retry.status).toBe(200);
      expect(accumulateAnthropic(parseSse(retry.text)).stopped).toBe(true);
      const [c0, c1] = proxy.records("f-cut");
      expect(c0!.finishReason).toBe("aborted");
      expect(c0!.error).toMatchObject({ kind: "engine", message: expect.stringContaining("cut-stream") });
      expect(c0!.completionIds.length).toBeGreaterThan(0);
      // the partial turn is context now (not the stored completion): rendered without its reasoning
      expect(c1!.reused).toEqual([]);
      const text = rt.tokenizer.decode(c1!.promptIds);
      expect(text).toContain("<|im_start|>assistant\nI'll create the file now.  \n<|im_end|>");
      expect(text).not.toContain(TOOL_TURN.reasoning);

      const chat = await httpCall(`${r.baseUrl}/v1/chat/completions`, {
        body: { ...chatBody, stream: true },
        headers: { authorization: `Bearer ${r.apiKey}` },
      });
      expect(chat.cut).toBe(true);
      expect(chat.text).not.toContain("[DONE]");
      const resp = await httpCall(`${r.baseUrl}/v1/responses`, {
        body: { model: "m", stream: true, input: "x", tools: [{ type: "function", name: "Write", parameters: WRITE_TOOL_SCHEMA }] },
        headers: { authorization: `Bearer ${r.apiKey}` },
      });
      expect(resp.cut).toBe(true);
      expect(parseSse(resp.text).some((e) => e.event === "response.function_call_arguments.delta")).toBe(true);
      expect(parseSse(resp.text).some((e) => e.event === "response.completed")).toBe(false);
      expect(proxy.records("f-cut").map((x) => x.finishReason)).toEqual(["aborted", "tool_calls", "aborted", "aborted"]);
    } finally {
      await proxy.close();
    }
  });

  it("a broken engine stream under a non-streaming request: an engine error, the partial completion recorded", async () => {
    const proxy = await startProxy({ model: scriptedModel([{ ...TOOL_TURN, fault: "cut-stream" }]) });
    try {
      const r = proxy.registerRollout("f-cut-json");
      const reply = await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: chatBody, headers: { authorization: `Bearer ${r.apiKey}` } });
      expect(reply.status).toBe(500);
      expect(JSON.parse(reply.text).error).toMatchObject({ type: "server_error", message: expect.stringContaining("cut-stream") });
      const [rec] = proxy.records("f-cut-json");
      expect(rec).toMatchObject({ finishReason: "aborted", error: { kind: "engine" }, stream: false });
      expect(rec!.completionIds.length).toBeGreaterThan(0);
    } finally {
      await proxy.close();
    }
  });

  it("an unterminated tool call cut by the limit: Responses answers incomplete, the record says unterminated-tool-call", async () => {
    const proxy = await startProxy({ model: scriptedModel([{ raw: 'ok\n<tool_call>\n{"name": "Write", "arguments": {"content": "h', finish: "length" }]) });
    try {
      const r = proxy.registerRollout("f-unterminated");
      const reply = await httpCall(`${r.baseUrl}/v1/responses`, {
        body: { model: "m", stream: true, input: "x" },
        headers: { authorization: `Bearer ${r.apiKey}` },
      });
      const { items, final } = accumulateResponses(parseSse(reply.text));
      expect(final.status).toBe("incomplete");
      expect(items.find((i) => i.type === "function_call").arguments).toBe('{"content": "h');
      const rec = proxy.records("f-unterminated")[0]!;
      expect(rec.finishReason).toBe("length");
      expect(rec.parse).toMatchObject({ ok: false, error: "unterminated-tool-call" });
    } finally {
      await proxy.close();
    }
  });

  it("a prompt over the context window is refused and recorded as a bad request", async () => {
    const proxy = await startProxy({ model: scriptedModel([{ text: "x" }], { maxContextTokens: 20 }) });
    try {
      const r = proxy.registerRollout("f-ctx");
      const reply = await httpCall(`${r.baseUrl}/v1/chat/completions`, {
        body: { model: "m", messages: [{ role: "user", content: "word ".repeat(50) }] },
        headers: { authorization: `Bearer ${r.apiKey}` },
      });
      expect(reply.status).toBe(400);
      expect(JSON.parse(reply.text).error.code).toBe("context_length_exceeded");
      expect(proxy.records("f-ctx")[0]!.error?.kind).toBe("bad-request");
    } finally {
      await proxy.close();
    }
  });

  it("a client that disconnects mid-generation is recorded and the engine is told to stop", async () => {
    let sawAbort = false;
    const slow: Engine = {
      type: "slow",
      generate: (req) => slowGenerate(req),
      async generateStream(req, onChunk) {
        onChunk({ ids: [9707], logprobs: [-0.5] });
        return slowGenerate(req);
      },
    };
    function slowGenerate(req: GenerateRequest): Promise<GenerateResult> {
      return new Promise((_resolve, reject) => {
        req.signal?.addEventListener("abort", () => {
          sawAbort = true;
          reject(new EngineError("aborted"));
        });
      });
    }
    let recorded: (r: CallRecord) => void = () => {};
    const got = new Promise<CallRecord>((resolve) => (recorded = resolve));
    const proxy = await startProxy({ model: scriptedModel([]), engine: slow, onRecord: (r) => recorded(r) });
    try {
      const r = proxy.registerRollout("f-gone");
      const body = JSON.stringify({ ...chatBody, stream: true });
      const req = request(`${r.baseUrl}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${r.apiKey}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      });
      req.on("error", () => {});
      req.end(body);
      setTimeout(() => req.destroy(), 300);
      const rec = await got;
      expect(sawAbort).toBe(true);
      expect(rec).toMatchObject({ finishReason: "aborted", error: { kind: "client-disconnect" }, stream: true });
      expect(rec.promptIds.length).toBeGreaterThan(0);
      expect(rec.timings.firstTokenMs).toBeGreaterThanOrEqual(rec.timings.receivedMs);
      // the proxy still serves
      const ok = await httpCall(`${r.baseUrl}/v1/models`);
      expect(ok.status).toBe(200);
    } finally {
      await proxy.close();
    }
  });
});
