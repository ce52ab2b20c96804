import { describe, expect, it } from "vitest";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { httpCall, scriptedModel, startsWithIds } from "./helpers.js";

const TURNS = 12;

describe("incremental rendering", () => {
  it("tokenizes only the new messages; the prompt is previous prompt + completion + closing + new + generation prompt", async () => {
    const script = Array.from({ length: TURNS + 1 }, (_, i) => ({
      reasoning: `step ${i}`,
      text: `Reading part ${i}.`,
      toolCalls: [{ name: "read", arguments: { path: `/w/part-${i}.txt`, offset: i * 100 } }],
    }));
    const model = scriptedModel(script, { maxContextTokens: 200_000 });
    const rt = await loadModelRuntime(model);
    const proxy = await startProxy({ model });
    try {
      const r = proxy.registerRollout("inc");
      const tools = [
        {
          type: "function",
          function: {
            name: "read",
            description: "Read a file",
            parameters: { type: "object", properties: { path: { type: "string" }, offset: { type: "integer" } } },
          },
        },
      ];
      const messages: any[] = [
        { role: "system", content: "You read files. ".repeat(200) },
        { role: "user", content: "Summarize all parts." },
      ];
      const results: string[] = [];
      for (let i = 0; i < TURNS; i++) {
        const reply = JSON.parse(
          (await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: { model: "m", tools, messages }, headers: { authorization: `Bearer ${r.apiKey}` } }))
            .text,
        );
        const msg = reply.choices[0].message;
        const result = `part ${i}: ${"lorem ipsum dolor sit amet ".repeat(60)}`;
        results.push(result);
        messages.push(
          { role: "assistant", content: msg.content, tool_calls: msg.tool_calls },
          { role: "tool", tool_call_id: msg.tool_calls[0].id, content: result },
        );
      }
      const recs = proxy.records("inc");
      expect(recs).toHaveLength(TURNS);
      for (let n = 1; n < TURNS; n++) {
        const prev = recs[n - 1]!;
        const cur = recs[n]!;
        const newGroup = rt.tokenizer.encode(`<|im_start|>user\n<tool_response>\n${results[n - 1]}\n</tool_response><|im_end|>\n`);
        expect(cur.promptIds).toEqual([...prev.promptIds, ...prev.completionIds, ...rt.closingAfterStopIds, ...newGroup, ...rt.generationPromptIds]);
        expect(cur.tokenizedPromptTokens).toBe(newGroup.length);
        expect(cur.reused).toEqual(Array.from({ length: n }, (_, k) => k));
      }
      const last = recs[TURNS - 1]!;
      expect(last.tokenizedPromptTokens).toBeLessThan(last.promptIds.length / 10);
      // a request that rewrites history (e.g. compaction) branches: only the part after the edit is new
      const compacted = [messages[0], { role: "user", content: "Summary so far: parts 0-11 read." }];
      expect(
        (
          await httpCall(`${r.baseUrl}/v1/chat/completions`, {
            body: { model: "m", tools, messages: compacted },
            headers: { authorization: `Bearer ${r.apiKey}` },
          })
        ).status,
      ).toBe(200);
      const branch = proxy.records("inc")[TURNS]!;
      expect(branch.reused).toEqual([]);
      expect(branch.tokenizedPromptTokens).toBe(rt.tokenizer.encode("<|im_start|>user\nSummary so far: parts 0-11 read.<|im_end|>\n").length);
      const header =
        recs[0]!.promptIds.length - rt.tokenizer.encode("<|im_start|>user\nSummarize all parts.<|im_end|>\n").length - rt.generationPromptIds.length;
      expect(startsWithIds(branch.promptIds, recs[0]!.promptIds.slice(0, header))).toBe(true);
    } finally {
      await proxy.close();
    }
  });
});

describe("segments shared across rollouts", () => {
  it("a second rollout with the same system prompt and first message tokenizes nothing new", async () => {
    const proxy = await startProxy({ model: scriptedModel([{ text: "a" }]) });
    try {
      const body = {
        model: "m",
        messages: [
          { role: "system", content: "A long shared system prompt. ".repeat(100) },
          { role: "user", content: "same task" },
        ],
      };
      for (const id of ["share-1", "share-2"]) {
        const r = proxy.registerRollout(id);
        expect((await httpCall(`${r.baseUrl}/v1/chat/completions`, { body, headers: { authorization: `Bearer ${r.apiKey}` } })).status).toBe(200);
      }
      const [a, b] = [proxy.records("share-1")[0]!, proxy.records("share-2")[0]!];
      expect(b.promptIds).toEqual(a.promptIds);
      expect(a.tokenizedPromptTokens).toBe(a.promptIds.length - 3);
      expect(b.tokenizedPromptTokens).toBe(0);
    } finally {
      await proxy.close();
    }
  });
});

describe("SegmentCache", () => {
  it("evicts the least recently used entries beyond its budget", async () => {
    const { SegmentCache } = await import("../../src/runtime/proxy/segment-cache.js");
    const cache = new SegmentCache(100);
    cache.set("a", Array(20).fill(1));
    cache.set("b", Array(20).fill(2));
    cache.get("a");
    cache.set("c", Array(20).fill(3));
    cache.set("d", Array(20).fill(4));
    cache.set("e", Array(20).fill(5));
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toHaveLength(20);
    expect(cache.get("e")).toHaveLength(20);
    cache.set("huge", Array(90).fill(0));
    expect(cache.get("huge")).toBeUndefined();
  });
});
