/**
 * Token-in-token-out against the re-serializations real harnesses do (reference: harness captures):
 * the stored completion ids must come back verbatim in later prompts, and for harnesses that
 * append, call n+1's prompt must start with call n's prompt + completion.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadModelRuntime, type ModelRuntime } from "../../src/runtime/model/model-runtime.js";
import type { ProxyHandle } from "../../src/runtime/proxy/api.js";
import type { CallRecord } from "../../src/runtime/records/index.js";
import { renderPromptFresh } from "../../src/runtime/proxy/render.js";
import { openaiChat } from "../../src/runtime/proxy/dialects/openai-chat.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import {
  accumulateAnthropic,
  accumulateResponses,
  httpCall,
  indexOfIds,
  parseSse,
  scriptedModel,
  startsWithIds,
  TOOL_TURN,
  WRITE_TOOL_SCHEMA,
} from "./helpers.js";

const SECOND_TURN = {
  reasoning: "One more file.\n",
  text: "Now b.txt.",
  toolCalls: [{ name: "Write", arguments: { content: "yo", file_path: "/w/b.txt", mode: { append: false, lines: [1, 2] } } }],
};
const SCRIPT = [TOOL_TURN, SECOND_TURN, { reasoning: "All done.", text: "done" }];

function expectAppended(prev: CallRecord, next: CallRecord): void {
  expect(startsWithIds(next.promptIds, [...prev.promptIds, ...prev.completionIds])).toBe(true);
  expect(next.reused).toContain(prev.seq);
}

/** Keys in the order of the tool's JSON schema, compact: how Claude Code re-sends tool input. */
function schemaOrder(input: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of [...Object.keys(WRITE_TOOL_SCHEMA.properties), ...Object.keys(input)]) if (k in input && !(k in out)) out[k] = input[k];
  return out;
}

describe("TITO with harness re-serializations", () => {
  let proxy: ProxyHandle;
  let rt: ModelRuntime;
  beforeAll(async () => {
    const model = scriptedModel(SCRIPT);
    rt = await loadModelRuntime(model);
    proxy = await startProxy({ model });
  });
  afterAll(() => proxy.close());

  it("Claude Code: cache_control moves, system message string vs blocks, tool input re-ordered, thinking re-sent or dropped", async () => {
    const r = proxy.registerRollout("tito-claude");
    const post = (b: unknown) => httpCall(`${r.baseUrl}/v1/messages?beta=true`, { body: b, headers: { "x-api-key": r.apiKey } });
    const base = {
      model: "claude-sonnet-4-5",
      max_tokens: 32000,
      stream: true,
      thinking: { type: "enabled", budget_tokens: 31999 },
      system: [
        { type: "text", text: "billing" },
        { type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } },
      ],
      tools: [{ name: "Write", description: "Write a file", input_schema: WRITE_TOOL_SCHEMA }],
    };
    const sysMsg = (cached: boolean) =>
      cached
        ? { role: "system", content: [{ type: "text", text: "env: cwd=/w", cache_control: { type: "ephemeral" } }] }
        : { role: "system", content: "env: cwd=/w" };
    const user = (cached: boolean) => ({
      role: "user",
      content: [
        { type: "text", text: "<system-reminder>ctx</system-reminder>" },
        { type: "text", text: "Create two files", ...(cached ? { cache_control: { type: "ephemeral" } } : {}) },
      ],
    });
    const echo = (message: any, keepThinking: boolean) => ({
      role: "assistant",
      content: message.content
        .filter((b: any) => keepThinking || b.type !== "thinking")
        .map((b: any) => (b.type === "tool_use" ? { ...b, input: schemaOrder(b.input) } : b)),
    });
    const toolResult = (message: any, cached: boolean) => ({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: message.content.find((b: any) => b.type === "tool_use").id,
          content: "File created\n<system-reminder><total_tokens>1 left</total_tokens></system-reminder>",
          ...(cached ? { cache_control: { type: "ephemeral" } } : {}),
        },
      ],
    });

    const m1 = accumulateAnthropic(parseSse((await post({ ...base, messages: [sysMsg(true), user(true)] })).text)).message;
    expect(m1.content.map((b: any) => b.type)).toEqual(["thinking", "text", "tool_use"]);
    // key order of the model's arguments differs from the schema order Claude Code re-sends
    expect(Object.keys(m1.content[2].input)).toEqual(["content", "file_path"]);
    const turn2 = [sysMsg(false), user(false), echo(m1, true), toolResult(m1, true)];
    const m2 = accumulateAnthropic(parseSse((await post({ ...base, messages: turn2 })).text)).message;
    const turn3 = [sysMsg(false), user(false), echo(m1, false), toolResult(m1, false), echo(m2, false), toolResult(m2, true)];
    const m3 = accumulateAnthropic(parseSse((await post({ ...base, messages: turn3 })).text)).message;
    expect(m3.content.find((b: any) => b.type === "text").text).toBe("done");

    const [c0, c1, c2] = proxy.records("tito-claude");
    expectAppended(c0!, c1!);
    expectAppended(c1!, c2!);
    expect(c2!.reused).toEqual([0, 1]);
    // the stored reasoning is in the prompt even though the harness dropped it in call 3
    expect(rt.tokenizer.decode(c2!.promptIds)).toContain(SECOND_TURN.reasoning);
  });

  it("OpenClaw chat: trailing context message stays last, tool-call ids lose '_', no reasoning echoed", async () => {
    const r = proxy.registerRollout("tito-openclaw");
    const post = (b: unknown) => httpCall(`${r.baseUrl}/v1/chat/completions`, { body: b, headers: { authorization: `Bearer ${r.apiKey}` } });
    const tools = [{ type: "function", function: { name: "Write", parameters: WRITE_TOOL_SCHEMA } }];
    const sys = { role: "system", content: "You are OpenClaw." };
    const userMsg = { role: "user", content: "[Sun 2026-11-29 06:50 UTC] Create two files" };
    const ctx = (n: number) => ({
      role: "user",
      content: `<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nActive exec sessions: ${n}\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>`,
    });
    const rewrite = (msg: any) => ({
      role: "assistant",
      content: msg.content,
      tool_calls: msg.tool_calls.map((tc: any) => ({
        ...tc,
        id: tc.id.replaceAll("_", ""),
        function: { ...tc.function, arguments: JSON.stringify(JSON.parse(tc.function.arguments)) },
      })),
    });
    const result = (msg: any, text: string) => ({ role: "tool", tool_call_id: msg.tool_calls[0].id.replaceAll("_", ""), content: text });

    const a1 = JSON.parse((await post({ model: "m", tools, messages: [sys, userMsg, ctx(0)] })).text).choices[0].message;
    expect(a1.tool_calls[0].id).toContain("_");
    const a2 = JSON.parse((await post({ model: "m", tools, messages: [sys, userMsg, rewrite(a1), result(a1, "ok"), ctx(1)] })).text).choices[0].message;
    await post({ model: "m", tools, messages: [sys, userMsg, rewrite(a1), result(a1, "ok"), rewrite(a2), result(a2, "ok"), ctx(2)] });

    const [c0, c1, c2] = proxy.records("tito-openclaw");
    // not an append (the context message moved), but the raw completion comes back verbatim
    expect(startsWithIds(c1!.promptIds, [...c0!.promptIds, ...c0!.completionIds])).toBe(false);
    expect(indexOfIds(c1!.promptIds, c0!.completionIds)).toBeGreaterThan(0);
    expect(c1!.reused).toEqual([0]);
    expect(c2!.reused).toEqual([0, 1]);
    const at0 = indexOfIds(c2!.promptIds, c0!.completionIds);
    const at1 = indexOfIds(c2!.promptIds, c1!.completionIds);
    expect(at0).toBeGreaterThan(0);
    expect(at1).toBeGreaterThan(at0);
    // calls 2 and 3 share everything up to the moved context message
    const shared = c1!.promptIds.length - rt.tokenizer.encode(`<|im_start|>user\n${ctx(1).content}<|im_end|>\n`).length - rt.generationPromptIds.length;
    expect(startsWithIds(c2!.promptIds, c1!.promptIds.slice(0, shared))).toBe(true);
  });

  it("Qwen Code chat: reasoning_content trimmed and placed after tool_calls, tool content as parts", async () => {
    const r = proxy.registerRollout("tito-qwen");
    const post = (b: unknown) => httpCall(`${r.baseUrl}/v1/chat/completions`, { body: b, headers: { authorization: `Bearer ${r.apiKey}` } });
    const tools = [{ type: "function", function: { name: "Write", parameters: WRITE_TOOL_SCHEMA } }];
    const messages: any[] = [
      { role: "system", content: "You are Qwen Code." },
      {
        role: "user",
        content: [
          { type: "text", text: "<system-reminder>x</system-reminder>" },
          { type: "text", text: "Create two files" },
        ],
      },
    ];
    for (let i = 0; i < 2; i++) {
      const stream = parseSse((await post({ model: "m", tools, stream: true, stream_options: { include_usage: true }, messages })).text);
      const choice = stream.map((e) => e.json?.choices?.[0]).filter(Boolean);
      const content = choice.map((c: any) => c.delta.content ?? "").join("");
      const reasoning = choice.map((c: any) => c.delta.reasoning_content ?? "").join("");
      const calls: any[] = [];
      for (const c of choice)
        for (const tc of c.delta.tool_calls ?? []) {
          calls[tc.index] ??= { id: tc.id, type: "function", function: { name: tc.function.name, arguments: "" } };
          calls[tc.index].function.arguments += tc.function.arguments ?? "";
        }
      const compact = calls.map((tc) => ({ ...tc, function: { ...tc.function, arguments: JSON.stringify(JSON.parse(tc.function.arguments)) } }));
      messages.push({ role: "assistant", content, tool_calls: compact, reasoning_content: reasoning.replace(/\n$/, "") });
      messages.push({ role: "tool", tool_call_id: calls[0].id, content: [{ type: "text", text: "done" }] });
    }
    await post({ model: "m", tools, messages });
    const [c0, c1, c2] = proxy.records("tito-qwen");
    expectAppended(c0!, c1!);
    expectAppended(c1!, c2!);
  });

  it("Codex responses: reasoning item without id, arguments verbatim, function_call_output appended", async () => {
    const r = proxy.registerRollout("tito-codex");
    const post = (b: unknown) => httpCall(`${r.baseUrl}/v1/responses`, { body: b, headers: { authorization: `Bearer ${r.apiKey}` } });
    const tools = [{ type: "function", name: "Write", parameters: WRITE_TOOL_SCHEMA, strict: false }];
    const input: any[] = [
      { type: "message", role: "developer", content: [{ type: "input_text", text: "You are Codex." }] },
      { type: "message", role: "developer", content: [{ type: "input_text", text: "<permissions>full</permissions>" }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "<environment_context>cwd=/w</environment_context>" }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Create two files" }] },
    ];
    const body = {
      model: "gpt-5-codex",
      stream: true,
      store: false,
      reasoning: { effort: "low", summary: "auto" },
      include: ["reasoning.encrypted_content"],
      tools,
    };
    for (let i = 0; i < 2; i++) {
      const { items } = accumulateResponses(parseSse((await post({ ...body, input })).text));
      for (const item of items) {
        const { id: _id, status: _s, ...rest } = item;
        input.push(
          item.type === "reasoning"
            ? { type: "reasoning", summary: item.summary, encrypted_content: item.encrypted_content }
            : item.type === "message"
              ? { ...rest, id: item.id }
              : rest,
        );
      }
      const fc = items.find((it) => it.type === "function_call");
      input.push({ type: "function_call_output", call_id: fc.call_id, output: "Wrote file" });
    }
    await post({ ...body, input });
    const [c0, c1, c2] = proxy.records("tito-codex");
    expectAppended(c0!, c1!);
    expectAppended(c1!, c2!);
  });

  it("keeps past reasoning where the Qwen3 template would drop it (a new user turn follows)", async () => {
    const r = proxy.registerRollout("tito-user-turns");
    const post = (b: unknown) => httpCall(`${r.baseUrl}/v1/chat/completions`, { body: b, headers: { authorization: `Bearer ${r.apiKey}` } });
    const tools = [{ type: "function", function: { name: "Write", parameters: WRITE_TOOL_SCHEMA } }];
    const messages: any[] = [{ role: "user", content: "first question" }];
    const a1 = JSON.parse((await post({ model: "m", tools, messages })).text).choices[0].message;
    messages.push(a1, { role: "tool", tool_call_id: a1.tool_calls[0].id, content: "ok" }, { role: "user", content: "second question" });
    const body2 = { model: "m", tools, messages };
    await post(body2);
    const [c0, c1] = proxy.records("tito-user-turns");
    expectAppended(c0!, c1!);
    const text = rt.tokenizer.decode(c1!.promptIds);
    expect(text).toContain(`<think>\n${TOOL_TURN.reasoning}\n</think>`);
    // the template itself, given the same messages, drops that reasoning: the decision in render.ts
    const parsed = openaiChat.parseRequest(body2);
    if (!parsed.ok) throw new Error(parsed.message);
    expect(rt.tokenizer.decode(renderPromptFresh(rt, parsed.request))).not.toContain(TOOL_TURN.reasoning);
  });

  it("pi: identical retry after a cut stream continues from the retried answer (the cut one is a dead leaf)", async () => {
    const model = scriptedModel([{ text: "All done here.", fault: "cut-stream" }, { text: "All done here." }, { text: "bye" }]);
    const p = await startProxy({ model });
    try {
      const r = p.registerRollout("tito-pi-retry");
      const post = (b: unknown) => httpCall(`${r.baseUrl}/v1/chat/completions`, { body: b, headers: { authorization: `Bearer ${r.apiKey}` } });
      const messages: any[] = [
        { role: "system", content: "pi" },
        { role: "user", content: "finish up" },
      ];
      expect((await post({ model: "m", stream: true, messages })).cut).toBe(true);
      const answer = JSON.parse((await post({ model: "m", messages })).text).choices[0].message;
      await post({ model: "m", messages: [...messages, { role: "assistant", content: answer.content }, { role: "user", content: "thanks" }] });
      const [c0, c1, c2] = p.records("tito-pi-retry");
      expect(c0!.finishReason).toBe("aborted");
      expect(c1!.promptIds).toEqual(c0!.promptIds);
      expect(c2!.reused).toEqual([1]);
      expectAppended(c1!, c2!);
    } finally {
      await p.close();
    }
  });
});
