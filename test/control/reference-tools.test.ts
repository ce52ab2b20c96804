// Reference solutions are written once with reins's workspace tools; each shipped harness spec maps
// them to its own tools, so the same task replays through Claude Code, Codex and OpenClaw.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import type { ScriptedTurn } from "../../src/compiler/contract/plan.js";
import { ReferenceToolError, referenceTurnsFor } from "../../src/runtime/control/reference-tools.js";
import { loadHarnessSpec } from "../harness/harness-spec.js";

const CONTENT = 'it\'s "done"\n$(rm -rf /)';
const turns: ScriptedTurn[] = [
  { reasoning: "write it", toolCalls: [{ name: "write_file", arguments: { path: "answer.txt", content: CONTENT } }] },
  { toolCalls: [{ name: "run_command", arguments: { command: "wc -l data.txt > count.txt" } }] },
  { toolCalls: [{ name: "Glob", arguments: { pattern: "*.txt" } }] },
  { text: "done" },
];

describe("reference tools", () => {
  it("maps write_file and run_command to Claude Code's Write and Bash, keeping other calls and text", () => {
    const out = referenceTurnsFor(turns, loadHarnessSpec("claude-code"));
    expect(out[0]).toEqual({ reasoning: "write it", toolCalls: [{ name: "Write", arguments: { file_path: "answer.txt", content: CONTENT } }] });
    expect(out[1]!.toolCalls).toEqual([{ name: "Bash", arguments: { command: "wc -l data.txt > count.txt" } }]);
    expect(out[2]).toEqual(turns[2]);
    expect(out[3]).toEqual({ text: "done" });
  });

  it("quotes Codex's shell command so any content lands in the file byte for byte", () => {
    const out = referenceTurnsFor(turns, loadHarnessSpec("codex"));
    const call = out[0]!.toolCalls![0]!;
    expect(call.name).toBe("exec_command");
    const dir = execFileSync("mktemp", ["-d"], { encoding: "utf8" }).trim();
    execFileSync("bash", ["-c", (call.arguments as { cmd: string }).cmd], { cwd: dir });
    expect(execFileSync("cat", [`${dir}/answer.txt`], { encoding: "utf8" })).toBe(CONTENT);
    execFileSync("rm", ["-rf", dir]);
  });

  it("maps to OpenClaw's write and exec; reins-agent replays the turns as written", () => {
    const out = referenceTurnsFor(turns, loadHarnessSpec("openclaw"));
    expect(out[0]!.toolCalls![0]!.name).toBe("write");
    expect(out[1]!.toolCalls).toEqual([{ name: "exec", arguments: { command: "wc -l data.txt > count.txt" } }]);
    expect(referenceTurnsFor(turns, loadHarnessSpec("reins-agent"))).toEqual(turns);
  });

  it("a mapping naming an argument the reins tool lacks is an error that says where", () => {
    const harness = { name: "h", referenceTools: { write_file: { name: "W", arguments: { p: "{{file}}" } } } };
    expect(() => referenceTurnsFor(turns, harness)).toThrow(ReferenceToolError);
    expect(() => referenceTurnsFor(turns, harness)).toThrow(/referenceTools\.write_file \(turn 1, call 1\)/);
  });
});
