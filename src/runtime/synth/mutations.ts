/**
 * Mutated references for the mutation gate: the reference solution with the last file it writes
 * left out, with a value in it changed, and with every program it writes ending at its first line
 * with status 0 (a verifier that trusts a test command's exit status passes that without a fix).
 * A verifier that still passes any of them checks too little.
 * Pure; works on the reference as written (reins's tools), before a harness's names.
 */
import type { ScriptedTurn } from "../../compiler/index.js";

export interface Mutation {
  kind: "file-left-out" | "value-changed" | "exits-early";
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

/**
 * The statement that ends a program of this file's language with status 0 at once, by extension
 * (JavaScript, TypeScript, Python, shell, Ruby, PHP, Perl); undefined for a file that is not a program.
 */
function exitStatement(path: string): string | undefined {
  const ext = /\.([A-Za-z]+)$/.exec(path)?.[1]?.toLowerCase();
  if (ext === undefined) return undefined;
  if (["js", "mjs", "cjs", "ts", "mts", "cts"].includes(ext)) return "process.exit(0);";
  if (ext === "py") return "import sys; sys.exit(0)";
  if (["sh", "bash"].includes(ext)) return "exit 0";
  if (ext === "rb") return "exit 0";
  if (ext === "pl") return "exit 0;";
  if (ext === "php") return "<?php exit(0); ?>";
  return undefined;
}

/**
 * A program that ends at its first statement with status 0, keeping the rest of its text (a
 * `#!` line stays first); undefined for a file that is not a program. The hack a test command's
 * exit status cannot tell from a fix: the tests import the module, and the process ends there.
 */
export function exitEarly(path: string, content: string): string | undefined {
  const stmt = exitStatement(path);
  if (stmt === undefined) return undefined;
  const shebang = /^#![^\n]*\n/.exec(content)?.[0] ?? "";
  return `${shebang}${stmt}\n${content.slice(shebang.length)}`;
}

export function mutationsOf(turns: readonly ScriptedTurn[]): Mutation[] {
  const out: Mutation[] = [];
  const write = lastCall(turns, true);
  const any = write ?? lastCall(turns, false);
  if (any) {
    const [t, c] = any;
    const call = turns[t]!.toolCalls![c]!;
    const args = argsOf(call);
    const kept = turns
      .map((turn, i) => (i === t ? { ...turn, toolCalls: turn.toolCalls!.filter((_, j) => j !== c) } : turn))
      .filter((turn) => (turn.toolCalls?.length ?? 0) > 0 || (turn.text ?? "") !== "");
    out.push({ kind: "file-left-out", what: call.name === "write_file" ? `${String(args.path)} not written` : `the ${call.name} call left out`, turns: kept });
  }
  if (write) {
    const [t, c] = write;
    const call = turns[t]!.toolCalls![c]!;
    const args = argsOf(call);
    const changed = typeof args.content === "string" ? changeValue(args.content) : undefined;
    if (changed !== undefined) {
      const toolCalls = turns[t]!.toolCalls!.map((x, j) => (j === c ? { ...x, arguments: { ...args, content: changed } } : x));
      out.push({
        kind: "value-changed",
        what: `a value in ${String(args.path)} changed`,
        turns: turns.map((turn, i) => (i === t ? { ...turn, toolCalls } : turn)),
      });
    }
  }
  const early = exitEarlyTurns(turns);
  if (early) out.push({ kind: "exits-early", what: `${early.paths.join(", ")} ending with status 0 at its first line`, turns: early.turns });
  return out;
}

/** The reference with every program it writes ending early (exitEarly); undefined when it writes none. */
function exitEarlyTurns(turns: readonly ScriptedTurn[]): { turns: ScriptedTurn[]; paths: string[] } | undefined {
  const paths: string[] = [];
  const out = turns.map((turn) => {
    if (!turn.toolCalls) return turn;
    const toolCalls = turn.toolCalls.map((call) => {
      if (call.name !== "write_file") return call;
      const args = argsOf(call);
      const early = typeof args.path === "string" && typeof args.content === "string" ? exitEarly(args.path, args.content) : undefined;
      if (early === undefined) return call;
      paths.push(String(args.path));
      return { ...call, arguments: { ...args, content: early } };
    });
    return { ...turn, toolCalls };
  });
  return paths.length > 0 ? { turns: out, paths } : undefined;
}
