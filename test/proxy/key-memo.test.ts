/**
 * Segment keys remembered by position (key-memo.ts): a request that repeats the last one's
 * segments reuses their keys; anything that would serialize differently — one character, key
 * order, a key more — gets its own key, so a rollout's prompt is what a fresh rendering gives.
 */
import { describe, expect, it } from "vitest";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import { openaiChat } from "../../src/runtime/proxy/dialects/openai-chat.js";
import { KeyMemo, sameValue } from "../../src/runtime/proxy/key-memo.js";
import { renderPromptFresh } from "../../src/runtime/proxy/render.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { httpCall, scriptedModel } from "./helpers.js";

describe("sameValue", () => {
  it("is JSON.stringify's equality: key order, undefined keys, arrays and nesting count", () => {
    const cases: [unknown, unknown][] = [
      [
        { a: 1, b: [1, { c: "x" }] },
        { a: 1, b: [1, { c: "x" }] },
      ],
      [
        { a: 1, b: 2 },
        { b: 2, a: 1 },
      ],
      [{ a: 1, b: undefined }, { a: 1 }],
      [{ a: [1, 2] }, { a: [1, 2, 3] }],
      [{ a: "x" }, { a: "y" }],
      [[], {}],
      [{ 0: "a" }, ["a"]],
      [null, {}],
      [{ a: null }, { a: {} }],
      ["long ".repeat(1000), "long ".repeat(1000)],
      [1, "1"],
    ];
    for (const [a, b] of cases) {
      const undefinedKey = JSON.stringify(a) === JSON.stringify(b) && Object.keys(Object(a)).length !== Object.keys(Object(b)).length;
      expect(sameValue(a, b), JSON.stringify([a, b])).toBe(JSON.stringify(a) === JSON.stringify(b) && !undefinedKey);
    }
  });
});

describe("KeyMemo", () => {
  it("reuses a key only for an equal value at the same position, and falls back to a shared memo", () => {
    let made = 0;
    const make = (v: unknown) => `k${++made}:${JSON.stringify(v)}`;
    const shared = new KeyMemo();
    const a = new KeyMemo();
    const k1 = a.keyOf(0, { s: "sys", t: [1] }, make, shared);
    expect(a.keyOf(0, { s: "sys", t: [1] }, make, shared)).toBe(k1);
    expect(made).toBe(1);
    // another position, another value, key order: made afresh
    expect(a.keyOf(1, { s: "sys", t: [1] }, make, shared)).toBe(`k2:${JSON.stringify({ s: "sys", t: [1] })}`);
    expect(a.keyOf(0, { t: [1], s: "sys" }, make, shared)).toBe(`k3:${JSON.stringify({ t: [1], s: "sys" })}`);
    // a second memo finds the first one's last value in the shared memo
    const b = new KeyMemo();
    expect(b.keyOf(0, { t: [1], s: "sys" }, make, shared)).toBe(`k3:${JSON.stringify({ t: [1], s: "sys" })}`);
    expect(made).toBe(3);
  });
});

describe("prompts with remembered keys", () => {
  it("first calls that differ from the last one in key order or one character get a fresh rendering's ids", async () => {
    const model = scriptedModel(Array.from({ length: 8 }, () => ({ text: "ok" })));
    const rt = await loadModelRuntime(model);
    const proxy = await startProxy({ model });
    const tool = (parameters: Record<string, unknown>) => [{ type: "function", function: { name: "write", description: "Write a file.", parameters } }];
    const system = "You are a careful agent. ".repeat(40);
    const bodies = [
      { tools: tool({ type: "object", properties: { path: { type: "string" } } }), system },
      { tools: tool({ properties: { path: { type: "string" } }, type: "object" }), system },
      { tools: tool({ properties: { path: { type: "string" } }, type: "object" }), system: `${system.slice(0, -2)}!` },
      { tools: tool({ type: "object", properties: { path: { type: "string" } } }), system },
      { tools: tool({ type: "object", properties: { path: { type: "string" }, mode: { type: "string" } } }), system },
    ].map(({ tools, system }) => ({
      model: "m",
      tools,
      messages: [
        { role: "system", content: system },
        { role: "user", content: "write hi" },
      ],
    }));
    try {
      for (const [i, body] of bodies.entries()) {
        const r = proxy.registerRollout(`memo-${i}`);
        expect((await httpCall(`${r.baseUrl}/v1/chat/completions`, { body, headers: { authorization: `Bearer ${r.apiKey}` } })).status).toBe(200);
        const parsed = openaiChat.parseRequest(body);
        if (!parsed.ok) throw new Error(parsed.message);
        expect(proxy.records(`memo-${i}`)[0]!.promptIds, `request ${i}`).toEqual(renderPromptFresh(rt, parsed.request));
      }
      // the renderings differ (key order reaches the template's JSON), so the check above can fail
      const [a, b] = [0, 1].map((i) => proxy.records(`memo-${i}`)[0]!.promptIds);
      expect(a).not.toEqual(b);
    } finally {
      await proxy.close();
    }
  });

  it("a harness that re-sends a past message changed gets it rendered as it is now, not as remembered", async () => {
    const model = scriptedModel(Array.from({ length: 4 }, (_, i) => ({ text: `answer ${i}` })));
    const rt = await loadModelRuntime(model);
    const proxy = await startProxy({ model });
    try {
      const r = proxy.registerRollout("memo-edit");
      const messages: Record<string, unknown>[] = [
        { role: "system", content: "sys" },
        { role: "user", content: "first question" },
      ];
      const post = async () => {
        const reply = JSON.parse(
          (await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: { model: "m", messages }, headers: { authorization: `Bearer ${r.apiKey}` } })).text,
        );
        return reply.choices[0].message as { content: string };
      };
      messages.push({ role: "assistant", content: (await post()).content }, { role: "user", content: "second question" });
      await post();
      // the harness edits its first user message (compaction, a redaction): from there the prompt is rendered anew
      messages[1] = { role: "user", content: "first question, edited" };
      await post();
      const [first, , edited] = proxy.records("memo-edit");
      expect(rt.tokenizer.decode(edited!.promptIds)).toContain("first question, edited");
      // the assistant turn is still the stored completion (spliced); the messages around it are rendered as they are now
      expect(edited!.reused).toEqual([0]);
      const turn = (role: string, content: string) => rt.tokenizer.encode(`<|im_start|>${role}\n${content}<|im_end|>\n`);
      expect(edited!.promptIds).toEqual([
        ...turn("system", "sys"),
        ...turn("user", "first question, edited"),
        ...rt.generationPromptIds,
        ...first!.completionIds,
        ...rt.closingAfterStopIds,
        ...turn("user", "second question"),
        ...rt.generationPromptIds,
      ]);
    } finally {
      await proxy.close();
    }
  });
});
