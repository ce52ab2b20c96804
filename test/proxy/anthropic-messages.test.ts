import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProxyHandle, RolloutRegistration } from "../../src/runtime/proxy/api.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { accumulateAnthropic, httpCall, parseSse, scriptedModel, TOOL_TURN, WRITE_TOOL_SCHEMA } from "./helpers.js";

const body = {
  model: "claude-sonnet-4-5",
  max_tokens: 32000,
  thinking: { type: "enabled", budget_tokens: 31999 },
  system: [
    { type: "text", text: "x-anthropic-billing-header: cc_version=0;" },
    { type: "text", text: "You are a coding agent.", cache_control: { type: "ephemeral" } },
  ],
  tools: [{ name: "Write", description: "Write a file", input_schema: WRITE_TOOL_SCHEMA }],
  messages: [{ role: "user", content: [{ type: "text", text: "Create hello.txt containing hi", cache_control: { type: "ephemeral" } }] }],
};
const BAD_ARGS = '{"content":  "hi", "file_path": "/w/hello.txt"';

describe("anthropic-messages dialect", () => {
  let proxy: ProxyHandle;
  beforeAll(async () => {
    proxy = await startProxy({
      model: scriptedModel([
        TOOL_TURN,
        { text: "done" },
        { raw: `<tool_call>\n{"name": "Write", "arguments": ${BAD_ARGS}\n</tool_call>` },
        { text: "cut short by the limit", finish: "length" },
      ]),
    });
  });
  afterAll(() => proxy.close());
  const call = (r: RolloutRegistration, b: unknown) =>
    httpCall(`${r.baseUrl}/v1/messages?beta=true`, { body: b, headers: { "x-api-key": r.apiKey, "anthropic-version": "2023-06-01" } });

  it("streams message_start … message_stop with thinking, signature, text and tool_use", async () => {
    const r = proxy.registerRollout("a-stream");
    const reply = await call(r, { ...body, stream: true });
    expect(reply.status).toBe(200);
    const events = parseSse(reply.text);
    const types = events.map((e) => e.event);
    expect(types[0]).toBe("message_start");
    expect(types.at(-2)).toBe("message_delta");
    expect(types.at(-1)).toBe("message_stop");
    const { message, stopped } = accumulateAnthropic(events);
    expect(stopped).toBe(true);
    expect(message.id).toMatch(/^msg_/);
    expect(message.content.map((b: any) => b.type)).toEqual(["thinking", "text", "tool_use"]);
    expect(message.content[0].thinking).toBe(TOOL_TURN.reasoning);
    expect(message.content[0].signature.length).toBeGreaterThan(10);
    expect(message.content[1].text).toBe(TOOL_TURN.text);
    expect(message.content[2]).toMatchObject({ type: "tool_use", name: "Write", input: TOOL_TURN.toolCalls[0]!.arguments });
    expect(message.content[2].id).toMatch(/^toolu_[0-9a-f]{24}$/);
    expect(message.stop_reason).toBe("tool_use");
    const rec = proxy.records("a-stream")[0]!;
    expect(message.usage.input_tokens).toBe(rec.promptIds.length);
    expect(message.usage.output_tokens).toBe(rec.completionIds.length);
    expect(rec.dialect).toBe("anthropic-messages");
  });

  it("answers non-streaming, and leaves thinking out when the request does not enable it", async () => {
    const r = proxy.registerRollout("a-plain");
    const { thinking: _omit, ...noThinking } = body;
    const reply = await call(r, noThinking);
    const j = JSON.parse(reply.text);
    expect(j.type).toBe("message");
    expect(j.content.map((b: any) => b.type)).toEqual(["text", "tool_use"]);
    expect(j.content[1].input).toEqual(TOOL_TURN.toolCalls[0]!.arguments);
    expect(j.stop_reason).toBe("tool_use");
    const second = JSON.parse((await call(r, noThinking)).text);
    expect(second.content).toEqual([{ type: "text", text: "done" }]);
    expect(second.stop_reason).toBe("end_turn");
  });

  it("streams invalid tool JSON as the raw string in input_json_delta; non-streaming wraps it", async () => {
    const r = proxy.registerRollout("a-bad");
    await call(r, body);
    await call(r, body);
    const reply = await call(r, { ...body, stream: true });
    const events = parseSse(reply.text);
    const partial = events
      .filter((e) => e.json?.delta?.type === "input_json_delta")
      .map((e) => e.json.delta.partial_json)
      .join("");
    expect(partial).toBe(BAD_ARGS);
    const { message } = accumulateAnthropic(events);
    expect(message.content.at(-1).input).toEqual({ __unparsedToolInput: { raw: BAD_ARGS, len: BAD_ARGS.length } });
    expect(proxy.records("a-bad")[2]!.parse.error).toBe("invalid-tool-json");

    const r2 = proxy.registerRollout("a-bad-plain");
    await call(r2, body);
    await call(r2, body);
    const j = JSON.parse((await call(r2, body)).text);
    expect(j.content.at(-1).input).toEqual({ INVALID_JSON: BAD_ARGS });
  });

  it("maps the token limit to stop_reason max_tokens", async () => {
    const r = proxy.registerRollout("a-len");
    for (let i = 0; i < 3; i++) await call(r, body);
    const { message } = accumulateAnthropic(parseSse((await call(r, { ...body, stream: true })).text));
    expect(message.stop_reason).toBe("max_tokens");
    expect(message.content).toEqual([{ type: "text", text: "cut short by the limit" }]);
  });

  it("counts tokens without recording a call", async () => {
    const r = proxy.registerRollout("a-count");
    const reply = await httpCall(`${r.baseUrl}/v1/messages/count_tokens`, {
      body: { model: "m", messages: body.messages, system: body.system, tools: body.tools },
      headers: { "x-api-key": r.apiKey },
    });
    expect(reply.status).toBe(200);
    const n = JSON.parse(reply.text).input_tokens;
    expect(n).toBeGreaterThan(50);
    expect(proxy.records("a-count")).toHaveLength(0);
    const first = JSON.parse((await call(r, body)).text);
    expect(first.usage.input_tokens).toBe(n);
  });

  it("accepts a system message inside messages and tool_result blocks followed by text", async () => {
    const r = proxy.registerRollout("a-shapes");
    const first = JSON.parse((await call(r, body)).text);
    const tu = first.content.find((b: any) => b.type === "tool_use");
    const reply = await call(r, {
      ...body,
      messages: [
        { role: "system", content: [{ type: "text", text: "env: cwd=/w" }] },
        ...body.messages,
        { role: "assistant", content: first.content },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: tu.id, content: [{ type: "text", text: "written" }] },
            { type: "text", text: "<system-reminder>ok</system-reminder>" },
          ],
        },
      ],
    });
    expect(reply.status).toBe(200);
    const prompt = proxy.records("a-shapes")[1]!.promptIds;
    const { tokenizer } = await import("../../src/runtime/model/model-runtime.js").then((m) => m.loadModelRuntime(scriptedModel([])));
    const text = tokenizer.decode(prompt);
    expect(text).toContain("<|im_start|>system\nenv: cwd=/w<|im_end|>");
    expect(text).toContain("<tool_response>\nwritten\n</tool_response><|im_end|>\n<|im_start|>user\n<system-reminder>ok</system-reminder><|im_end|>");
  });
});
