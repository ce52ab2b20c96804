/**
 * Deterministic ids and stream chunking shared by the dialects. Ids derive from the call key
 * ("<rollout>:<seq>") so a run is reproducible and ids never collide across rollouts.
 */
import { hash } from "node:crypto";

/** `<prefix><hex>`: e.g. makeId("toolu_", "r1:0:tool:0") → "toolu_3f9c…" (24 hex chars). */
export function makeId(prefix: string, seed: string, hexChars = 24): string {
  return prefix + hash("sha256", seed, "hex").slice(0, hexChars);
}

/** An opaque token for a reasoning block (Anthropic signature, Responses encrypted_content). */
export function makeReasoningToken(seed: string): string {
  return hash("sha256", `reasoning:${seed}`, "base64");
}

const SURROGATE = /[\uD800-\uDFFF]/;

/** Split text into stream deltas of at most `size` code points (never splits a surrogate pair). */
export function chunkText(text: string, size = 48): string[] {
  if (text.length === 0) return [];
  if (!SURROGATE.test(text)) {
    // one code unit per code point: plain slices
    const out: string[] = [];
    for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
    return out;
  }
  const points = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""));
  return out;
}

/** Split tool arguments into at least two deltas (so a broken engine stream can be relayed cut mid call). */
export function chunkArguments(text: string, size = 48): string[] {
  if (text.length === 0) return [];
  const points = Array.from(text);
  if (points.length === 1) return [text];
  const piece = Math.min(size, Math.ceil(points.length / 2));
  return chunkText(text, piece);
}

/** Unix seconds. */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
