/**
 * The small model's tokenizer and chat template, loaded the way the proxy loads any
 * `tokenizer: {type: file}` model (src/runtime/model).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { beforeAll, describe, expect, it } from "vitest";
import type { ResolvedModel } from "../../src/compiler/contract/plan.js";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import { renderTurn } from "../../src/runtime/model/output-format.js";
import { loadTokenizer } from "../../src/runtime/model/tokenizer.js";
import { makeTinyModel, type TinyModel } from "../training/helpers.js";
import { tempDir } from "../temp.js";

let model: TinyModel;

beforeAll(() => {
  model = makeTinyModel(4);
});

function resolvedModel(dir: string): ResolvedModel {
  return {
    name: "tiny",
    tokenizer: { type: "file", path: join(dir, "tokenizer.json") },
    toolCallFormat: "qwen3",
    reasoning: { start: "<think>", end: "</think>" },
    stopTokens: ["<|im_end|>"],
    maxContextTokens: 8192,
    sampling: { temperature: 1, topP: 1, maxTokens: 64 },
    engine: { type: "onnx", modelPath: dir, threads: 1, parallel: 1, seed: 0 },
  };
}

describe("the small model's tokenizer", () => {
  it("round-trips any text and keeps the chat and tool markers as single tokens", async () => {
    const tok = await loadTokenizer({ type: "file", path: join(model.dir, "tokenizer.json") });
    for (const [marker, id] of Object.entries(model.specialTokens)) expect(tok.tokenId(marker)).toBe(id);
    const text = '<|im_start|>user\nRead ünïcode 数据 & emoji 🙂<|im_end|>\n<tool_call>{"name": "read"}</tool_call>';
    const ids = tok.encode(text);
    expect(tok.decode(ids)).toBe(text);
    for (const marker of ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]) expect(ids).toContain(model.specialTokens[marker]);
    expect(Math.max(...ids)).toBeLessThan(model.vocabSize);
    // Without merges the tokenizer is byte-level: one id per UTF-8 byte outside the markers.
    expect(tok.encode("héllo")).toEqual([...Buffer.from("héllo", "utf8")]);
  });

  it("learns BPE merges from a corpus and still round-trips", async () => {
    const dir = tempDir("reins-corpus-");
    const corpus = join(dir, "corpus.txt");
    writeFileSync(
      corpus,
      "Read the file notes.md and write the summary to summary.md.\n".repeat(50) + '<tool_call>{"name": "read_file"}</tool_call>\n'.repeat(20),
    );
    const bpe = makeTinyModel(5, dir, ["--corpus", corpus, "--merges", "60", "--no-onnx"]);
    expect(bpe.vocabSize).toBeGreaterThan(model.vocabSize);
    const tok = await loadTokenizer({ type: "file", path: join(bpe.dir, "tokenizer.json") });
    const text = "Read the file notes.md and write the summary — ünïcode too.";
    const ids = tok.encode(text);
    expect(tok.decode(ids)).toBe(text);
    expect(ids.length).toBeLessThan(Buffer.byteLength(text, "utf8") / 2);
  });

  it("renders its chat template with tools, tool calls and grouped tool results", async () => {
    const tok = await loadTokenizer({ type: "file", path: join(model.dir, "tokenizer.json") });
    const text = new Template(tok.chatTemplate!).render({
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "What is in a.md?" },
        { role: "assistant", content: "", tool_calls: [{ type: "function", function: { name: "read", arguments: { path: "a.md" } } }] },
        { role: "tool", content: "# A" },
        { role: "tool", content: "# B" },
      ],
      tools: [{ type: "function", function: { name: "read", description: "Read a file", parameters: { type: "object" } } }],
      add_generation_prompt: true,
    });
    expect(text).toBe(
      "<|im_start|>system\nBe brief.\n# Tools\n" +
        '{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}\n' +
        'Call a tool with <tool_call>{"name": NAME, "arguments": ARGS}</tool_call><|im_end|>\n' +
        "<|im_start|>user\nWhat is in a.md?<|im_end|>\n" +
        '<|im_start|>assistant\n<tool_call>\n{"name": "read", "arguments": {"path": "a.md"}}\n</tool_call><|im_end|>\n' +
        "<|im_start|>user\n<tool_response>\n# A\n</tool_response>\n<tool_response>\n# B\n</tool_response><|im_end|>\n" +
        "<|im_start|>assistant\n",
    );
  });

  it("loads as a proxy model runtime whose template writes assistant turns as the qwen3 format does", async () => {
    const rt = await loadModelRuntime(resolvedModel(model.dir));
    expect(rt.stopIds).toEqual([model.specialTokens["<|im_end|>"]]);
    expect(rt.generationPromptIds).toEqual(rt.tokenizer.encode("<|im_start|>assistant\n"));
    const turn = { reasoning: "look first", text: "Reading.", toolCalls: [{ name: "read", arguments: { path: "a.md" } }] };
    const raw = renderTurn(turn, rt.format);
    const rendered = new Template(rt.tokenizer.chatTemplate!).render({
      messages: [
        { role: "user", content: "q" },
        {
          role: "assistant",
          content: turn.text,
          reasoning_content: turn.reasoning,
          tool_calls: [{ type: "function", function: { name: "read", arguments: { path: "a.md" } } }],
        },
      ],
    });
    expect(rendered).toBe(`<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n${raw}<|im_end|>\n`);
    const parsed = rt.parse(rt.tokenizer.encode(raw)).parsed;
    expect(parsed.toolCalls[0]).toMatchObject({ name: "read", arguments: { path: "a.md" } });
    expect(parsed.reasoning).toBe("look first");
    expect(parsed.text).toBe("Reading.");
  });
});
