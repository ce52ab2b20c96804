/**
 * Token ids back to text for the viewer, with the run's own tokenizer (plan.json's model). When
 * the tokenizer cannot be loaded (the run came from another machine and its tokenizer.json is not
 * here), the viewer shows ids and says why. The tokenizer's files are named by plan.json, so they
 * lie wherever the run's machine kept them; the viewer loads them only when each is a regular file
 * of at most 64 MiB outside /proc, /sys and /dev (a plan naming /dev/zero or a FIFO never stalls it).
 */
import { realpathSync, statSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { describeType } from "../../compiler/index.js";
import { loadTokenizer, type Tokenizer } from "../model/tokenizer.js";

export interface TokenText {
  tokenizer: Tokenizer | null;
  /** Why there is no tokenizer (null when there is one). */
  missing: string | null;
}

const MAX_TEXT_TOKENS = 200_000;
/** Largest tokenizer file the viewer loads (tokenizer.json of large vocabularies is ~30 MB). */
const MAX_TOKENIZER_BYTES = 64 * 1024 * 1024;
const KERNEL_TREES = ["/proc", "/sys", "/dev"];

export async function tokenTextFor(model: ResolvedModel | null): Promise<TokenText> {
  if (!model?.tokenizer) return { tokenizer: null, missing: "the run's plan names no model tokenizer" };
  const refused = refuseTokenizerFiles(model.tokenizer);
  if (refused) return { tokenizer: null, missing: refused };
  try {
    return { tokenizer: await loadTokenizer(model.tokenizer), missing: null };
  } catch (err) {
    return { tokenizer: null, missing: (err as Error).message };
  }
}

/** Why the tokenizer's files are not loaded (a file that is not there is left to the loader); null when they may be. */
function refuseTokenizerFiles(spec: NonNullable<ResolvedModel["tokenizer"]>): string | null {
  if (spec.type === "qwen3") return null;
  const files =
    spec.type === "file"
      ? [spec.path, join(dirname(spec.path), "tokenizer_config.json")]
      : ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja"].map((f) => join(spec.path, f));
  for (const file of files) {
    let real: string;
    try {
      real = realpathSync.native(file);
    } catch {
      continue;
    }
    const st = statSync(real, { throwIfNoEntry: false });
    if (!st) continue;
    const why = KERNEL_TREES.some((t) => real === t || real.startsWith(t + sep))
      ? `it lies under ${real.split(sep).slice(0, 2).join(sep)}`
      : !st.isFile()
        ? `it is ${describeType(st)}`
        : st.size > MAX_TOKENIZER_BYTES
          ? `it is ${st.size} bytes; the viewer loads at most 64 MiB`
          : null;
    if (why) return `the run's tokenizer file ${file} is not loaded: ${why}`;
  }
  return null;
}

/** Each id's own text (special tokens kept). */
export function pieces(t: Tokenizer, ids: readonly number[]): string[] {
  return ids.map((id) => t.decode([id]));
}

/** A run of ids as text; very long runs keep their head and tail. */
export function decodeText(t: Tokenizer, ids: readonly number[]): { text: string; omitted: number } {
  if (ids.length <= MAX_TEXT_TOKENS) return { text: t.decode(ids), omitted: 0 };
  const half = MAX_TEXT_TOKENS / 2;
  return { text: `${t.decode(ids.slice(0, half))}\n…\n${t.decode(ids.slice(ids.length - half))}`, omitted: ids.length - MAX_TEXT_TOKENS };
}
