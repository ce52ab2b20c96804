/**
 * The gates that need no sandbox: an instruction that quotes an answer its verifier expects, and
 * an instruction too close to one already kept. Pure.
 */
import { distance } from "fastest-levenshtein";
import type { ResolvedTask } from "../../compiler/index.js";

/** An expected value of at least this many characters counts as an answer the instruction can give away. */
const SPECIFIC = 6;

/** The values a task's verifier expects: whole expected files and expected values. */
export function expectedAnswers(task: ResolvedTask): string[] {
  const out: string[] = [];
  const add = (v: unknown) => {
    if (typeof v === "string" && v.trim() !== "") out.push(v.trim());
    else if (typeof v === "number" || typeof v === "boolean") out.push(String(v));
  };
  for (const c of task.verifier.checks as unknown as Record<string, unknown>[]) {
    if (c.type === "fileEquals") add(c.content);
    else if (c.type === "jsonPath" || c.type === "yamlPath" || c.type === "numeric") add(c.equals);
  }
  return out;
}

function quotes(instruction: string, value: string): boolean {
  const text = instruction.toLowerCase();
  const v = value.toLowerCase();
  if (v.length >= SPECIFIC) return text.includes(v);
  return new RegExp(`(^|[^a-z0-9])${v.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^a-z0-9])`).test(text);
}

/**
 * Why the task's instruction gives its answer away, or undefined: every value its verifier expects
 * is quoted in the instruction (so an agent passes without reading the workspace), and one of them
 * is specific (6+ characters). Echoing part of the question ("the Starter plan") is not a leak
 * while another expected value must still be found.
 */
export function leakOf(task: ResolvedTask): string | undefined {
  const answers = expectedAnswers(task);
  if (answers.length === 0 || !answers.every((a) => quotes(task.instruction, a))) return undefined;
  const leaked = answers.find((a) => a.length >= SPECIFIC);
  if (leaked === undefined) return undefined;
  return `task ${task.name}'s instruction quotes every answer its verifier expects (${JSON.stringify(leaked.length > 60 ? `${leaked.slice(0, 57)}...` : leaked)})`;
}

function normalized(text: string): string {
  return text.toLowerCase().replace(/\s+/g, " ").trim();
}

/** 1 for the same text, 0 for nothing in common: 1 − edit distance / the longer length. */
export function similarity(a: string, b: string): number {
  const x = normalized(a);
  const y = normalized(b);
  const longer = Math.max(x.length, y.length);
  return longer === 0 ? 1 : 1 - distance(x, y) / longer;
}

/** The kept instruction this one is at least `threshold` similar to, with the similarity. */
export function nearestDuplicate(
  instruction: string,
  kept: readonly { family: string; instruction: string }[],
  threshold: number,
): { family: string; similarity: number } | undefined {
  let best: { family: string; similarity: number } | undefined;
  for (const k of kept) {
    const s = similarity(instruction, k.instruction);
    if (s >= threshold && (!best || s > best.similarity)) best = { family: k.family, similarity: s };
  }
  return best;
}
