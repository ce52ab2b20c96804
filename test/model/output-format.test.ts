import { describe, expect, it } from "vitest";
import { type OutputFormat, parseCompletion, renderTurn } from "../../src/runtime/model/output-format.js";
import { toCanonicalJson, toPythonJson } from "../../src/runtime/model/python-json.js";
import { ChatTemplate } from "../../src/runtime/model/chat-template.js";
import { loadTokenizer } from "../../src/runtime/model/tokenizer.js";

const QWEN3: OutputFormat = { toolCallFormat: "qwen3", reasoning: { start: "<think>", end: "</think>" } };

describe("renderTurn / parseCompletion", () => {
  it("round-trips reasoning, text with trailing whitespace, and several tool calls", () => {
    const turn = {
      reasoning: "The user wants hello.txt.\nUse the tool.",
      text: "I'll create the file now.  \n",
      toolCalls: [
        { name: "write", arguments: { content: "hi", file_path: "/w/hello.txt" } },
        { name: "bash", arguments: { command: ["ls", "-la"], timeout: 5 } },
      ],
    };
    const raw = renderTurn(turn, QWEN3);
    expect(raw).toBe(
      '<think>\nThe user wants hello.txt.\nUse the tool.\n</think>\n\nI\'ll create the file now.  \n\n<tool_call>\n{"name": "write", "arguments": {"content": "hi", "file_path": "/w/hello.txt"}}\n</tool_call>\n<tool_call>\n{"name": "bash", "arguments": {"command": ["ls", "-la"], "timeout": 5}}\n</tool_call>',
    );
    const parsed = parseCompletion(raw, QWEN3);
    expect(parsed.error).toBeUndefined();
    expect(parsed.reasoning).toBe(turn.reasoning);
    expect(parsed.text).toBe(turn.text);
    expect(parsed.toolCalls.map((t) => [t.name, t.arguments])).toEqual(turn.toolCalls.map((t) => [t.name, t.arguments]));
    // arguments text is what the model wrote, not a re-serialization
    expect(parsed.toolCalls[0]!.argumentsText).toBe('{"content": "hi", "file_path": "/w/hello.txt"}');
  });

  it("writes an assistant turn exactly as the Qwen3 chat template renders it", async () => {
    const tok = await loadTokenizer({ type: "qwen3" });
    const template = new ChatTemplate(tok.chatTemplate!);
    const turn = { reasoning: "plan", text: "ok", toolCalls: [{ name: "f", arguments: { b: 1, a: "x\ny" } }] };
    const full = template.render(
      [
        { role: "user", content: "u" },
        {
          role: "assistant",
          content: "ok",
          reasoning_content: "plan",
          tool_calls: [{ type: "function", function: { name: "f", arguments: { b: 1, a: "x\ny" } } }],
        },
      ],
      undefined,
      false,
    );
    expect(full).toContain(`<|im_start|>assistant\n${renderTurn(turn, QWEN3)}<|im_end|>`);
  });

  it("keeps string arguments verbatim and text-only turns plain", () => {
    expect(renderTurn({ toolCalls: [{ name: "f", arguments: '{"a":  1}' }] }, QWEN3)).toBe('<tool_call>\n{"name": "f", "arguments": {"a":  1}}\n</tool_call>');
    expect(parseCompletion("just text", QWEN3)).toEqual({ reasoning: "", text: "just text", toolCalls: [] });
    expect(parseCompletion("a <tool_call> b", { toolCallFormat: "none", reasoning: null }).text).toBe("a <tool_call> b");
  });

  it("reports invalid tool JSON and keeps the raw arguments", () => {
    const raw = '<tool_call>\n{"name": "write", "arguments": {"content":  "hi", "path": "x"}\n</tool_call>'.replace('"x"}', '"x"');
    const parsed = parseCompletion(raw, QWEN3);
    expect(parsed.error).toBe("invalid-tool-json");
    expect(parsed.toolCalls).toHaveLength(1);
    expect(parsed.toolCalls[0]!.name).toBe("write");
    expect(parsed.toolCalls[0]!.argumentsText).toBe('{"content":  "hi", "path": "x"');
    expect(parsed.toolCalls[0]!.arguments).toBeUndefined();
  });

  it("reports an unterminated tool call (and a valid call whose envelope lost its brace)", () => {
    const cut = parseCompletion('text\n<tool_call>\n{"name": "write", "arguments": {"content": "h', QWEN3);
    expect(cut.error).toBe("unterminated-tool-call");
    expect(cut.text).toBe("text");
    expect(cut.toolCalls[0]!.name).toBe("write");
    expect(cut.toolCalls[0]!.argumentsText).toBe('{"content": "h');
    const noBrace = parseCompletion('<tool_call>\n{"name": "w", "arguments": {"a": 1}\n</tool_call>', QWEN3);
    expect(noBrace.error).toBe("invalid-tool-json");
    expect(noBrace.toolCalls[0]!.arguments).toEqual({ a: 1 });
  });

  it("reads reasoning cut by the token limit and reasoning without an opening marker", () => {
    expect(parseCompletion("<think>\nhalf a thou", QWEN3)).toMatchObject({ reasoning: "half a thou", text: "" });
    expect(parseCompletion("r\n</think>\n\nanswer", QWEN3)).toMatchObject({ reasoning: "r", text: "answer" });
  });
});

describe("JSON forms", () => {
  it("writes Python-style JSON and a key-order-free canonical form", () => {
    expect(toPythonJson({ b: [1, "é", null], a: { c: true } })).toBe('{"b": [1, "é", null], "a": {"c": true}}');
    expect(toCanonicalJson({ b: 1, a: { d: 2, c: 3 } })).toBe(toCanonicalJson({ a: { c: 3, d: 2 }, b: 1 }));
    expect(toCanonicalJson({ a: 1 })).not.toBe(toCanonicalJson({ a: "1" }));
  });
});
