import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallRecord } from "../../src/runtime/records/index.js";
import type { ProxyHandle, RolloutRegistration } from "../../src/runtime/proxy/api.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { accumulateChat, httpCall, parseSse, scriptedModel, TOOL_TURN, WRITE_TOOL_SCHEMA } from "./helpers.js";

const tools = [{ type: "function", function: { name: "Write", description: "Write a file", parameters: WRITE_TOOL_SCHEMA } }];
const base = {
  model: "scripted-model",
  messages: [
    { role: "system", content: "be brief" },
    { role: "user", content: "Create hello.txt containing hi" },
  ],
  tools,
};

describe("openai-chat dialect", () => {
  let proxy: ProxyHandle;
  const records: CallRecord[] = [];
  beforeAll(async () => {
    proxy = await startProxy({
      model: scriptedModel([
        TOOL_TURN,
        { text: "done" },
        { text: "a long answer that will not fit", finish: "length" },
        { raw: '<tool_call>\n{"name": "Write", "arguments": {"content":  "hi"\n</tool_call>' },
      ]),
      onRecord: (r) => records.push(r),
    });
  });
  afterAll(() => proxy.close());
  const call = (r: RolloutRegistration, body: unknown) =>
    httpCall(`${r.baseUrl}/v1/chat/completions`, { body, headers: { authorization: `Bearer ${r.apiKey}` } });

  it("answers non-streaming with reasoning_content, tool_calls and usage", async () => {
    const r = proxy.registerRollout("chat-plain");
    const reply = await call(r, base);
    expect(reply.status).toBe(200);
    const j = JSON.parse(reply.text);
    expect(j.object).toBe("chat.completion");
    const choice = j.choices[0];
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBe(TOOL_TURN.text);
    expect(choice.message.reasoning_content).toBe(TOOL_TURN.reasoning);
    expect(choice.message.tool_calls).toHaveLength(1);
    const tc = choice.message.tool_calls[0];
    expect(tc.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(tc.type).toBe("function");
    expect(tc.function.name).toBe("Write");
    expect(JSON.parse(tc.function.arguments)).toEqual(TOOL_TURN.toolCalls[0]!.arguments);
    const rec = proxy.records("chat-plain")[0]!;
    expect(j.usage).toEqual({
      prompt_tokens: rec.promptIds.length,
      completion_tokens: rec.completionIds.length,
      total_tokens: rec.promptIds.length + rec.completionIds.length,
    });
    expect(rec).toMatchObject({
      dialect: "openai-chat",
      stream: false,
      model: "scripted-model",
      finishReason: "tool_calls",
      parse: { ok: true },
      callClass: "main",
      weightsVersion: "scripted",
    });
    expect(rec.completionLogprobs).toHaveLength(rec.completionIds.length);
    expect(rec.completionIds.at(-1)).toBe(151645);
  });

  it("streams chunks a client can reassemble, with the usage chunk and [DONE]", async () => {
    const r = proxy.registerRollout("chat-stream");
    const reply = await call(r, { ...base, stream: true, stream_options: { include_usage: true } });
    expect(reply.status).toBe(200);
    expect(reply.headers["content-type"]).toMatch(/^text\/event-stream/);
    const events = parseSse(reply.text);
    expect(events[0]!.json.choices[0].delta.role).toBe("assistant");
    for (const e of events.slice(0, -2)) expect(e.json.object).toBe("chat.completion.chunk");
    const acc = accumulateChat(events);
    expect(acc.done).toBe(true);
    expect(acc.content).toBe(TOOL_TURN.text);
    expect(acc.reasoning).toBe(TOOL_TURN.reasoning);
    expect(acc.finish).toBe("tool_calls");
    expect(acc.toolCalls).toHaveLength(1);
    expect(JSON.parse(acc.toolCalls[0]!.arguments)).toEqual(TOOL_TURN.toolCalls[0]!.arguments);
    const usageChunk = events.at(-2)!.json;
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage.completion_tokens).toBe(proxy.records("chat-stream")[0]!.completionIds.length);
    expect(proxy.records("chat-stream")[0]!.stream).toBe(true);
  });

  it("maps the token limit to finish_reason length and records it as truncated", async () => {
    const r = proxy.registerRollout("chat-length");
    await call(r, base);
    await call(r, base);
    const reply = await call(r, { ...base, stream: true });
    const acc = accumulateChat(parseSse(reply.text));
    expect(acc.finish).toBe("length");
    expect(acc.content).toBe("a long answer that will not fit");
    expect(acc.usage).toBeUndefined();
    const rec = proxy.records("chat-length")[2]!;
    expect(rec.finishReason).toBe("length");
    expect(rec.parse).toEqual({ ok: false, error: "truncated" });
    expect(rec.completionIds).not.toContain(151645);
  });

  it("sends malformed tool-call arguments verbatim and records parse.error", async () => {
    const r = proxy.registerRollout("chat-badjson");
    for (let i = 0; i < 3; i++) await call(r, base);
    const reply = await call(r, base);
    const j = JSON.parse(reply.text);
    expect(j.choices[0].finish_reason).toBe("tool_calls");
    expect(j.choices[0].message.tool_calls[0].function.arguments).toBe('{"content":  "hi"');
    const rec = proxy.records("chat-badjson")[3]!;
    expect(rec.parse.ok).toBe(false);
    expect(rec.parse.error).toBe("invalid-tool-json");
  });

  it("honours a smaller max_tokens from the harness", async () => {
    const r = proxy.registerRollout("chat-max");
    const reply = await call(r, { ...base, max_completion_tokens: 5 });
    const j = JSON.parse(reply.text);
    expect(j.choices[0].finish_reason).toBe("length");
    expect(j.usage.completion_tokens).toBe(5);
  });
});
