/**
 * Token ids back to text for the viewer, with the run's own tokenizer (plan.json's model). When
 * the tokenizer cannot be loaded (the run came from another machine and its tokenizer.json is not
 * here), the viewer shows ids and says why.
 */
import type { ResolvedModel } from "../../compiler/contract/plan.js";
import { loadTokenizer, type Tokenizer } from "../model/tokenizer.js";

export interface TokenText {
  tokenizer: Tokenizer | null;
  /** Why there is no tokenizer (null when there is one). */
  missing: string | null;
}

const MAX_TEXT_TOKENS = 200_000;

export async function tokenTextFor(model: ResolvedModel | null): Promise<TokenText> {
  if (!model?.tokenizer) return { tokenizer: null, missing: "the run's plan names no model tokenizer" };
  try {
    return { tokenizer: await loadTokenizer(model.tokenizer), missing: null };
  } catch (err) {
    return { tokenizer: null, missing: (err as Error).message };
  }
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
