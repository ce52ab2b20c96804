import { describe, expect, it } from "vitest";
import type { ResolvedModel } from "../../src/compiler/contract/plan.js";
import { ChatTemplate, ChatTemplateError, type TemplateMessage } from "../../src/runtime/model/chat-template.js";
import { loadModelRuntime, ModelLoadError } from "../../src/runtime/model/model-runtime.js";
import { loadTokenizer } from "../../src/runtime/model/tokenizer.js";

function model(overrides: Partial<ResolvedModel> = {}): ResolvedModel {
  return {
    name: "m",
    tokenizer: { type: "qwen3" },
    toolCallFormat: "qwen3",
    reasoning: { start: "<think>", end: "</think>" },
    stopTokens: ["<|im_end|>"],
    maxContextTokens: 4096,
    sampling: { temperature: 1, topP: 1, maxTokens: 256 },
    engine: { type: "scripted", script: [] },
    ...overrides,
  };
}

describe("ChatTemplate pieces (Qwen3)", () => {
  it("header + message groups + generation prompt equal the template's own rendering", async () => {
    const tok = await loadTokenizer({ type: "qwen3" });
    const t = new ChatTemplate(tok.chatTemplate!);
    const tools = [
      {
        type: "function" as const,
        function: { name: "write", description: "Write a file", parameters: { type: "object", properties: { path: { type: "string" } } } },
      },
    ];
    const call = { type: "function" as const, function: { name: "write", arguments: { path: "a" } } };
    const msgs: TemplateMessage[] = [
      { role: "user", content: "make a" },
      { role: "assistant", content: "", tool_calls: [call, call] },
      { role: "tool", content: "ok 1" },
      { role: "tool", content: "ok 2" },
      { role: "user", content: "now b" },
      { role: "system", content: "mid-conversation note" },
    ];
    const full = t.render([{ role: "system", content: "You are terse." }, ...msgs], tools, true);
    const groups = [[msgs[0]!], [msgs[1]!], [msgs[2]!, msgs[3]!], [msgs[4]!], [msgs[5]!]];
    const pieces = t.header("You are terse.", tools) + groups.map((g) => t.group(g)).join("") + t.generationPrompt;
    expect(pieces).toBe(full);
    expect(t.generationPrompt).toBe("<|im_start|>assistant\n");
    expect(t.assistantClosing).toBe("<|im_end|>\n");
    expect(t.header(undefined, [])).toBe("");
  });

  it("reports a template whose output depends on the neighbours as not segmentable", () => {
    const bad = "{% for m in messages %}{{ messages|length }}:{{ m.content }};{% endfor %}";
    expect(() => new ChatTemplate(bad)).toThrow(ChatTemplateError);
    try {
      new ChatTemplate(bad);
    } catch (err) {
      expect((err as ChatTemplateError).code).toBe("ChatTemplateNotSegmentable");
    }
    expect(() => new ChatTemplate("{% for m in messages %}")).toThrow(/does not parse/);
  });
});

describe("model runtime", () => {
  it("resolves stop ids and the ids that close an assistant turn", async () => {
    const rt = await loadModelRuntime(model());
    expect(rt.stopIds).toEqual([151645]);
    expect(rt.generationPromptIds).toEqual([151644, 77091, 198]);
    expect(rt.closingStopId).toBe(151645);
    expect(rt.closingAfterStopIds).toEqual([198]);
    expect(rt.closingWithoutStopIds).toEqual([151645, 198]);
    const ids = rt.tokenizer.encode("<think>\nr\n</think>\n\nhello<|im_end|>");
    expect(rt.parse(ids).parsed).toEqual({ reasoning: "r", text: "hello", toolCalls: [] });
  });

  it("reports unknown stop tokens and unusable templates as diagnostics", async () => {
    await expect(loadModelRuntime(model({ stopTokens: ["<|nope|>"] }))).rejects.toMatchObject({ diagnostic: { code: "StopTokenUnknown" } });
    const err = await loadModelRuntime(model({ chatTemplate: "{{ messages|length }}{% for m in messages %}{{ m.content }}{% endfor %}" })).catch((e) => e);
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err.diagnostic.code).toBe("ChatTemplateNotSegmentable");
    expect(err.diagnostic.hint).not.toBe("");
  });
});
