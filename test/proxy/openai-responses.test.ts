import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProxyHandle, RolloutRegistration } from "../../src/runtime/proxy/api.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { accumulateResponses, httpCall, parseSse, scriptedModel, TOOL_TURN, WRITE_TOOL_SCHEMA } from "./helpers.js";

const body = {
  model: "gpt-5-codex",
  stream: true,
  store: false,
  tool_choice: "auto",
  parallel_tool_calls: true,
  reasoning: { effort: "low", summary: "auto" },
  include: ["reasoning.encrypted_content"],
  tools: [{ type: "function", name: "Write", description: "Write a file", parameters: WRITE_TOOL_SCHEMA, strict: false }, { type: "web_search" }],
  input: [
    { type: "message", role: "developer", content: [{ type: "input_text", text: "You are Codex." }] },
    { type: "message", role: "user", content: [{ type: "input_text", text: "Create hello.txt containing hi" }] },
  ],
};

describe("openai-responses dialect", () => {
  let proxy: ProxyHandle;
  beforeAll(async () => {
    proxy = await startProxy({ model: scriptedModel([TOOL_TURN, { text: "done" }, { text: "never finished", finish: "length" }]) });
  });
  afterAll(() => proxy.close());
  const call = (r: RolloutRegistration, b: unknown) => httpCall(`${r.baseUrl}/v1/responses`, { body: b, headers: { authorization: `Bearer ${r.apiKey}` } });

  it("streams created → items (reasoning, message, function_call) → completed", async () => {
    const r = proxy.registerRollout("resp-stream");
    const reply = await call(r, body);
    expect(reply.status).toBe(200);
    const events = parseSse(reply.text);
    expect(events[0]!.event).toBe("response.created");
    expect(events.at(-1)!.event).toBe("response.completed");
    const { items, final, argsDeltas } = accumulateResponses(events);
    expect(items.map((i) => i.type)).toEqual(["reasoning", "message", "function_call"]);
    expect(items[0].summary).toEqual([{ type: "summary_text", text: TOOL_TURN.reasoning }]);
    expect(typeof items[0].encrypted_content).toBe("string");
    expect(items[1].content[0]).toMatchObject({ type: "output_text", text: TOOL_TURN.text });
    expect(items[2]).toMatchObject({ type: "function_call", name: "Write", status: "completed" });
    expect(items[2].call_id).toMatch(/^call_/);
    expect(JSON.parse(items[2].arguments)).toEqual(TOOL_TURN.toolCalls[0]!.arguments);
    expect(argsDeltas.get(items[2].id)).toBe(items[2].arguments);
    expect(final.status).toBe("completed");
    expect(final.output).toEqual(items);
    const rec = proxy.records("resp-stream")[0]!;
    expect(final.usage).toMatchObject({ input_tokens: rec.promptIds.length, output_tokens: rec.completionIds.length });
    expect(events.some((e) => e.event === "response.output_text.delta")).toBe(true);
    expect(events.some((e) => e.event === "response.content_part.added")).toBe(true);
  });

  it("answers non-streaming; without a reasoning request there is no reasoning item", async () => {
    const r = proxy.registerRollout("resp-plain");
    const { reasoning: _r, include: _i, ...plain } = body;
    const j = JSON.parse((await call(r, { ...plain, stream: false })).text);
    expect(j.object).toBe("response");
    expect(j.status).toBe("completed");
    expect(j.output.map((i: any) => i.type)).toEqual(["message", "function_call"]);
  });

  it("ends a completion cut by the limit with response.incomplete", async () => {
    const r = proxy.registerRollout("resp-len");
    await call(r, { ...body, stream: false });
    await call(r, { ...body, stream: false });
    const events = parseSse((await call(r, body)).text);
    expect(events.at(-1)!.event).toBe("response.incomplete");
    const { final } = accumulateResponses(events);
    expect(final.status).toBe("incomplete");
    expect(final.incomplete_details).toEqual({ reason: "max_output_tokens" });
  });

  it("takes a plain string input and instructions", async () => {
    const r = proxy.registerRollout("resp-string");
    const reply = await call(r, { model: "m", instructions: "be brief", input: "hello", stream: false });
    expect(reply.status).toBe(200);
    const { tokenizer } = await import("../../src/runtime/model/model-runtime.js").then((m) => m.loadModelRuntime(scriptedModel([])));
    expect(tokenizer.decode(proxy.records("resp-string")[0]!.promptIds)).toBe(
      "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
    );
  });
});

describe("openai-responses custom (freeform) tools", () => {
  it("answers a call to a custom tool as custom_tool_call and recognises it when echoed back", async () => {
    const patch = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n";
    const proxy = await startProxy({
      model: scriptedModel([{ text: "Patching.", toolCalls: [{ name: "apply_patch", arguments: { input: patch } }] }, { text: "done" }]),
    });
    try {
      const r = proxy.registerRollout("resp-custom");
      const post = (b: unknown) => httpCall(`${r.baseUrl}/v1/responses`, { body: b, headers: { authorization: `Bearer ${r.apiKey}` } });
      const tools = [
        { type: "custom", name: "apply_patch", description: "Apply a patch", format: { type: "grammar", syntax: "lark", definition: "start: patch" } },
      ];
      const input: any[] = [{ type: "message", role: "user", content: [{ type: "input_text", text: "add hello.txt" }] }];
      const events = parseSse((await post({ model: "m", stream: true, tools, input })).text);
      const { items } = accumulateResponses(events);
      const call = items.find((i) => i.type === "custom_tool_call");
      expect(call).toMatchObject({ name: "apply_patch", input: patch });
      expect(
        events
          .filter((e) => e.event === "response.custom_tool_call_input.delta")
          .map((e) => e.json.delta)
          .join(""),
      ).toBe(patch);
      for (const it of items) {
        const { id: _id, status: _s, ...rest } = it;
        input.push(rest);
      }
      input.push({ type: "custom_tool_call_output", call_id: call.call_id, output: "Done!" });
      await post({ model: "m", stream: true, tools, input });
      const [c0, c1] = proxy.records("resp-custom");
      expect(c1!.reused).toEqual([0]);
      expect(c1!.promptIds.slice(0, c0!.promptIds.length + c0!.completionIds.length)).toEqual([...c0!.promptIds, ...c0!.completionIds]);
    } finally {
      await proxy.close();
    }
  });
});

describe("openai-responses namespaced tools (Codex's MCP servers)", () => {
  // Codex offers an MCP server's tools as one `namespace` tool; the model calls them by one flat
  // name and Codex expects the call back split into namespace and name.
  const tools = [
    { type: "function", name: "exec_command", description: "Run a command", parameters: { type: "object", properties: { cmd: { type: "string" } } } },
    {
      type: "namespace",
      name: "mcp__search",
      description: "Tools in the mcp__search namespace.",
      tools: [
        { type: "function", name: "search", description: "Search the runbooks", parameters: { type: "object", properties: { query: { type: "string" } } } },
      ],
    },
  ];
  const script = [{ text: "", toolCalls: [{ name: "mcp__search__search", arguments: { query: "billing owner" } }] }, { text: "done" }];

  for (const stream of [true, false]) {
    it(`offers mcp__search's search as mcp__search__search and answers its call split (${stream ? "streaming" : "whole"}); the echo extends the prompt`, async () => {
      const proxy = await startProxy({ model: scriptedModel(script) });
      try {
        const r = proxy.registerRollout("resp-ns");
        const post = (b: unknown) => httpCall(`${r.baseUrl}/v1/responses`, { body: b, headers: { authorization: `Bearer ${r.apiKey}` } });
        const input: any[] = [{ type: "message", role: "user", content: [{ type: "input_text", text: "who owns billing?" }] }];
        const reply = await post({ model: "m", stream, tools, input });
        expect(reply.status).toBe(200);
        const items: any[] = stream ? accumulateResponses(parseSse(reply.text)).items : JSON.parse(reply.text).output;
        const call = items.find((i) => i.type === "function_call");
        expect(call).toMatchObject({ name: "search", namespace: "mcp__search" });
        expect(JSON.parse(call.arguments)).toEqual({ query: "billing owner" });
        for (const it of items) {
          const { id: _id, status: _s, ...rest } = it;
          input.push(rest);
        }
        input.push({ type: "function_call_output", call_id: call.call_id, output: "billing.md: payments-core" });
        expect((await post({ model: "m", stream, tools, input })).status).toBe(200);
        const [c0, c1] = proxy.records("resp-ns");
        const { tokenizer } = await import("../../src/runtime/model/model-runtime.js").then((m) => m.loadModelRuntime(scriptedModel([])));
        const prompt = tokenizer.decode(c0!.promptIds);
        expect(prompt).toContain('"name": "mcp__search__search"');
        expect(prompt).not.toContain('"name": "mcp__search"');
        expect(c1!.reused).toEqual([0]);
        expect(c1!.promptIds.slice(0, c0!.promptIds.length + c0!.completionIds.length)).toEqual([...c0!.promptIds, ...c0!.completionIds]);
      } finally {
        await proxy.close();
      }
    });
  }
});
