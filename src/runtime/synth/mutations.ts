/**
 * Mutated references for the mutation gate: the reference solution with the last file it writes
 * left out, and with a value in it changed. A verifier that still passes either checks too little.
 * Pure; works on the reference as written (reins's tools), before a harness's names.
 */
import type { ScriptedTurn } from "../../compiler/index.js";

export interface Mutation {
  kind: "file-left-out" | "value-changed";
  /** What was changed, for the gate's reason. */
  what: string;
  turns: ScriptedTurn[];
}

type Call = NonNullable<ScriptedTurn["toolCalls"]>[number];

function argsOf(call: Call): Record<string, unknown> {
  return typeof call.arguments === "string" ? (JSON.parse(call.arguments) as Record<string, unknown>) : call.arguments;
}

/** Where the last write_file call is (turn, call), else the last tool call of any kind. */
function lastCall(turns: readonly ScriptedTurn[], write: boolean): [number, number] | undefined {
  for (let t = turns.length - 1; t >= 0; t--) {
    const calls = turns[t]!.toolCalls ?? [];
    for (let c = calls.length - 1; c >= 0; c--) if (!write || calls[c]!.name === "write_file") return [t, c];
  }
  return undefined;
}

/** A value changed: the last number in the text plus one, else its last word of 3+ letters reversed and marked. */
export function changeValue(text: string): string | undefined {
  const numbers = [...text.matchAll(/\d+/g)];
  const n = numbers.at(-1);
  if (n) return text.slice(0, n.index) + String(BigInt(n[0]) + 1n) + text.slice(n.index + n[0].length);
  const words = [...text.matchAll(/[A-Za-z]{3,}/g)];
  const w = words.at(-1);
  if (!w) return undefined;
  return `${text.slice(0, w.index)}x${[...w[0]].reverse().join("")}${text.slice(w.index + w[0].length)}`;
}

export function mutationsOf(turns: readonly ScriptedTurn[]): Mutation[] {
  const out: Mutation[] = [];
  const write = lastCall(turns, true);
  const any = write ?? lastCall(turns, false);
  if (any) {
    const [t, c] = any;
    const call = turns[t]!.toolCalls![c]!;
    const args = argsOf(call);
    const kept = turns.map((turn, i) => (i === t ? { ...turn, toolCalls: turn.toolCalls!.filter((_, j) => j !== c) } : turn)).filter((turn) => (turn.toolCalls?.length ?? 0) > 0 || (turn.text ?? "") !== "");
    out.push({ kind: "file-left-out", what: call.name === "write_file" ? `${String(args.path)} not written` : `the ${call.name} call left out`, turns: kept });
  }
  if (write) {
    const [t, c] = write;
    const call = turns[t]!.toolCalls![c]!;
    const args = argsOf(call);
    const changed = typeof args.content === "string" ? changeValue(args.content) : undefined;
    if (changed !== undefined) {
      const toolCalls = turns[t]!.toolCalls!.map((x, j) => (j === c ? { ...x, arguments: { ...args, content: changed } } : x));
      out.push({ kind: "value-changed", what: `a value in ${String(args.path)} changed`, turns: turns.map((turn, i) => (i === t ? { ...turn, toolCalls } : turn)) });
    }
  }
  return out;
}
