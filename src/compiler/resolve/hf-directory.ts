/**
 * A local Hugging Face directory named by a Model's `tokenizer: {type: huggingface, path}`, read
 * the way transformers 4.x and 5.x save it, into what the plan carries:
 * - the chat template: `chat_template.jinja` plus `additional_chat_templates/NAME.jinja` (5.x),
 *   else `chat_template` in tokenizer_config.json, a string or a list of `{name, template}` (4.x);
 *   the named one, else the only one, else `tool_use`, else `default`. It must parse.
 * - the template's variables: bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
 *   mask_token from tokenizer_config.json (strings or `{content}`), overridden by a legacy
 *   special_tokens_map.json where the config has no added_tokens_decoder (as transformers 5 does).
 * - the default stop tokens: generation_config.json's eos_token_id (one id or a list), spelled
 *   through tokenizer.json, then tokenizer_config.json's eos_token.
 * The tokenizer itself (tokenizer.json) is loaded by the runtime; here it must exist.
 * Every file is read as ../source/model-files.ts reads a Model's files: inside the project once
 * symlinks are resolved (the directory and each file in it), a regular file, within its cap
 * (tokenizer.json 64 MiB, the JSON configs 16 MiB, each template 1 MiB).
 */
import { lstatSync, readdirSync } from "node:fs";
import { parseChatTemplate } from "./chat-template-render.js";
import type { Code } from "../contract/codes.js";
import {
  checkModelFile,
  locateModelFile,
  MAX_TEMPLATE_DIR_ENTRIES,
  MODEL_FILE_LIMITS,
  MODEL_FILE_OUTSIDE_HINT,
  MODEL_FILE_TOO_LARGE_HINT,
  readModelFile,
  type ModelFileKind,
} from "../source/model-files.js";
import type { ProjectRoot, Refusal } from "../source/project.js";

export interface HfDirectory {
  /** The chosen template's text; absent when the directory has none. */
  chatTemplate?: string;
  /** Named special tokens the template sees, as transformers passes them. */
  variables: Record<string, string>;
  /** Stop tokens the directory names (generation_config.json, then eos_token); may be empty. */
  stopTokens: string[];
}

export interface HfProblem {
  field: "path" | "template";
  code: Code;
  message: string;
  hint?: string;
}

const SPECIAL_TOKENS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"] as const;

type Read<T> = { ok: true; value: T } | { ok: false; problem: HfProblem };

/**
 * Read a Hugging Face directory (absolute `dir`, `shown` as the spec wrote it) whose files must lie
 * in `roots` (the Model file's project). `wantTemplate`: false when the Model gives its own
 * template, so the directory's is neither chosen nor parsed.
 */
export function readHfDirectory(
  dir: string,
  shown: string,
  templateName: string | undefined,
  wantTemplate: boolean,
  roots: readonly ProjectRoot[],
): Read<HfDirectory> {
  const at = locateModelFile(dir, dir, roots);
  if (!at.ok) return at.code === "FileNotFound" ? fail("path", "TokenizerNotFound", `Hugging Face directory ${shown} does not exist.`) : refused(shown, at);
  const st = lstatSync(at.real, { throwIfNoEntry: false });
  if (!st?.isDirectory()) {
    return fail(
      "path",
      "TokenizerInvalid",
      `${shown} is not a directory.`,
      "A huggingface tokenizer names the directory that holds tokenizer.json; for a lone tokenizer.json use {type: file, path: FILE}.",
    );
  }
  const tokenizer = checkModelFile("tokenizer.json", dir, "tokenizer", roots);
  if (!tokenizer.ok) {
    if (tokenizer.code !== "FileNotFound") return refused(`${shown}/tokenizer.json`, tokenizer);
    return fail(
      "path",
      "TokenizerNotFound",
      `${shown} has no tokenizer.json.`,
      "reins reads fast tokenizers (tokenizer.json): save one with transformers' AutoTokenizer.from_pretrained(...).save_pretrained(DIR).",
    );
  }
  const config = readJson(dir, shown, "tokenizer_config.json", roots);
  if (!config.ok) return config;
  const generation = readJson(dir, shown, "generation_config.json", roots);
  if (!generation.ok) return generation;
  const legacyMap = "added_tokens_decoder" in config.value ? { ok: true as const, value: {} } : readJson(dir, shown, "special_tokens_map.json", roots);
  if (!legacyMap.ok) return legacyMap;

  const variables: Record<string, string> = {};
  for (const key of SPECIAL_TOKENS) {
    const value = tokenText(legacyMap.value[key]) ?? tokenText(config.value[key]);
    if (value !== undefined) variables[key] = value;
  }

  const templates = readTemplates(dir, shown, config.value, roots);
  if (!templates.ok) return templates;
  const chosen = wantTemplate ? chooseTemplate(templates.value, shown, templateName) : { ok: true as const, value: undefined };
  if (!chosen.ok) return chosen;

  const stops = stopTokensOf(dir, shown, generation.value, roots);
  if (!stops.ok) return stops;
  const stopTokens = stops.value;
  if (variables.eos_token !== undefined && !stopTokens.includes(variables.eos_token)) stopTokens.push(variables.eos_token);

  const out: HfDirectory = { variables, stopTokens };
  if (chosen.value !== undefined) out.chatTemplate = chosen.value;
  return { ok: true, value: out };
}

/** Every template the directory holds, by name ("default" for the unnamed one). */
function readTemplates(dir: string, shown: string, config: Record<string, unknown>, roots: readonly ProjectRoot[]): Read<Map<string, string>> {
  const out = new Map<string, string>();
  const main = readText(dir, shown, "chat_template.jinja", roots);
  if (!main.ok) return main;
  if (main.value !== undefined) out.set("default", main.value);
  const extra = locateModelFile("additional_chat_templates", dir, roots);
  if (!extra.ok && extra.code !== "FileNotFound") return refused(`${shown}/additional_chat_templates`, extra);
  if (extra.ok && lstatSync(extra.real, { throwIfNoEntry: false })?.isDirectory()) {
    const names = readdirSync(extra.real);
    if (names.length > MAX_TEMPLATE_DIR_ENTRIES) {
      return fail("path", "DirectoryTooLarge", `${shown}/additional_chat_templates has ${names.length} entries; at most ${MAX_TEMPLATE_DIR_ENTRIES} are read.`);
    }
    for (const f of names.sort()) {
      if (!f.endsWith(".jinja")) continue;
      const text = readText(dir, shown, `additional_chat_templates/${f}`, roots);
      if (!text.ok) return text;
      if (text.value !== undefined) out.set(f.slice(0, -".jinja".length), text.value);
    }
  }
  if (out.size > 0) return { ok: true, value: out };
  const inConfig = config.chat_template;
  if (typeof inConfig === "string") out.set("default", inConfig);
  else if (Array.isArray(inConfig)) {
    for (const entry of inConfig as unknown[]) {
      const e = entry as { name?: unknown; template?: unknown } | null;
      if (typeof e?.name !== "string" || typeof e.template !== "string") {
        return fail("path", "TokenizerInvalid", `${shown}/tokenizer_config.json: chat_template is a list whose entries are not {name, template} strings.`);
      }
      out.set(e.name, e.template);
    }
  } else if (inConfig !== undefined && inConfig !== null) {
    return fail("path", "TokenizerInvalid", `${shown}/tokenizer_config.json: chat_template is neither a string nor a list of named templates.`);
  }
  for (const [name, text] of out) {
    if (text.length > MODEL_FILE_LIMITS.template) {
      return fail(
        "path",
        "FileTooLarge",
        `${shown}/tokenizer_config.json: the chat template ${JSON.stringify(name)} has ${text.length} characters; the limit for a chat template is ${MODEL_FILE_LIMITS.template}.`,
        MODEL_FILE_TOO_LARGE_HINT,
      );
    }
  }
  return { ok: true, value: out };
}

function chooseTemplate(templates: Map<string, string>, shown: string, name: string | undefined): Read<string | undefined> {
  const names = [...templates.keys()];
  const list = names.length > 0 ? names.join(", ") : "none";
  let picked: string | undefined;
  if (name !== undefined) {
    if (!templates.has(name)) return fail("template", "ChatTemplateUnknown", `${shown} has no chat template named ${JSON.stringify(name)} (it has: ${list}).`);
    picked = name;
  } else if (names.length === 1) picked = names[0];
  else if (templates.has("tool_use")) picked = "tool_use";
  else if (templates.has("default")) picked = "default";
  else if (names.length > 1)
    return fail("template", "ChatTemplateUnknown", `${shown} has several chat templates (${list}) and none named default or tool_use.`);
  if (picked === undefined) return { ok: true, value: undefined };
  const text = templates.get(picked)!;
  try {
    parseChatTemplate(text);
  } catch (err) {
    return fail(
      name !== undefined ? "template" : "path",
      "ChatTemplateInvalid",
      `The chat template ${picked === "default" ? "" : `${JSON.stringify(picked)} `}of ${shown} does not parse: ${(err as Error).message}`,
      "reins renders templates with @huggingface/jinja (Jinja as transformers uses it, without Python methods it does not know); give a template it reads with chatTemplate or chatTemplateFile.",
    );
  }
  return { ok: true, value: text };
}

/** generation_config.json's eos_token_id, spelled as tokens through tokenizer.json. */
function stopTokensOf(dir: string, shown: string, generation: Record<string, unknown>, roots: readonly ProjectRoot[]): Read<string[]> {
  const raw = generation.eos_token_id;
  const ids = (Array.isArray(raw) ? raw : raw === undefined || raw === null ? [] : [raw]) as unknown[];
  if (ids.length === 0) return { ok: true, value: [] };
  if (!ids.every((id) => Number.isInteger(id)))
    return fail("path", "TokenizerInvalid", `${shown}/generation_config.json: eos_token_id is not an id or a list of ids.`);
  const tok = readJson(dir, shown, "tokenizer.json", roots, "tokenizer");
  if (!tok.ok) return tok;
  const spelled = new Map<number, string>();
  const vocab = (tok.value.model as { vocab?: unknown } | undefined)?.vocab;
  if (Array.isArray(vocab)) vocab.forEach((entry, id) => Array.isArray(entry) && typeof entry[0] === "string" && spelled.set(id, entry[0]));
  else if (vocab && typeof vocab === "object") for (const [text, id] of Object.entries(vocab)) if (typeof id === "number") spelled.set(id, text);
  for (const t of (tok.value.added_tokens ?? []) as { id?: unknown; content?: unknown }[])
    if (typeof t.id === "number" && typeof t.content === "string") spelled.set(t.id, t.content);
  const out: string[] = [];
  for (const id of ids as number[]) {
    const text = spelled.get(id);
    if (text === undefined) return fail("path", "StopTokenUnknown", `${shown}/generation_config.json: eos_token_id ${id} is not in its tokenizer.json.`);
    if (!out.includes(text)) out.push(text);
  }
  return { ok: true, value: out };
}

/** A JSON object file of the directory; a missing file reads as {}. */
function readJson(dir: string, shown: string, name: string, roots: readonly ProjectRoot[], kind: ModelFileKind = "config"): Read<Record<string, unknown>> {
  const read = readModelFile(name, dir, kind, roots);
  if (!read.ok) return read.code === "FileNotFound" ? { ok: true, value: {} } : refused(`${shown}/${name}`, read);
  let value: unknown;
  try {
    value = JSON.parse(read.text);
  } catch {
    // The message names the file, never its text.
    return fail("path", "TokenizerInvalid", `${shown}/${name} is not valid JSON.`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return fail("path", "TokenizerInvalid", `${shown}/${name} is not a JSON object.`);
  return { ok: true, value: value as Record<string, unknown> };
}

/** A template file of the directory; undefined when there is none. */
function readText(dir: string, shown: string, name: string, roots: readonly ProjectRoot[]): Read<string | undefined> {
  const read = readModelFile(name, dir, "template", roots);
  if (read.ok) return { ok: true, value: read.text };
  return read.code === "FileNotFound" ? { ok: true, value: undefined } : refused(`${shown}/${name}`, read);
}

/** A file of the directory that is not read: outside the project, not a regular file, too large. */
function refused(what: string, r: Refusal): { ok: false; problem: HfProblem } {
  const hint = r.code === "FileTooLarge" ? MODEL_FILE_TOO_LARGE_HINT : r.code === "OutsideProject" ? MODEL_FILE_OUTSIDE_HINT : undefined;
  return fail("path", r.code, `${what} is not read: ${r.why}.`, hint);
}

/** A special token as tokenizer configs write it: a string or an AddedToken `{content, ...}`. */
function tokenText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  const content = (value as { content?: unknown } | null | undefined)?.content;
  return typeof content === "string" ? content : undefined;
}

function fail(field: HfProblem["field"], code: Code, message: string, hint?: string): { ok: false; problem: HfProblem } {
  return { ok: false, problem: hint !== undefined ? { field, code, message, hint } : { field, code, message } };
}
