/**
 * Where a Harness's command puts the instruction (pure). The instruction is text a task (or a
 * generator model, in `reins synth`) wrote: one that starts with "-" ("--version", "-h", "--help")
 * is read as an option by a CLI that sees it where options are parsed, so the harness prints its
 * version and exits, or worse. An argument that starts with `{{instruction}}` is safe only after a
 * "--" (end of options; knob and MCP args are inserted before it, see launch-plan.ts) or as an
 * operand of a shell's `-c` script ($0, $1, …); bound to a flag ("--prompt={{instruction}}") it
 * does not start the argument. Anything else is a warning: the shipped harnesses all use "--".
 */
import { basename } from "node:path";
import type { HarnessSpec } from "../schema/harness.js";

export interface InstructionArgProblem {
  code: "InstructionReadAsOption";
  /** Under the Harness's `spec`. */
  path: (string | number)[];
  message: string;
}

/** A template that begins with the instruction: {{instruction}}, {{{instruction}}}, {{~ instruction}}. */
const STARTS_WITH_INSTRUCTION = /^\{\{\{?~?\s*instruction\s*~?\}?\}\}/;
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"]);
/** `-c`, or a cluster of one-letter shell options holding c (`-ec`, `-lc`). */
const SHELL_SCRIPT_FLAG = /^-[a-z]*c[a-z]*$/;

export function instructionArgProblems(spec: Pick<HarnessSpec, "command">): InstructionArgProblem[] {
  const command = spec.command ?? [];
  const endOfOptions = command.indexOf("--");
  const shell = command.length > 0 && SHELLS.has(basename(command[0]!)) ? command.findIndex((a, i) => i > 0 && SHELL_SCRIPT_FLAG.test(a)) : -1;
  const out: InstructionArgProblem[] = [];
  command.forEach((arg, i) => {
    if (i === 0 || !STARTS_WITH_INSTRUCTION.test(arg)) return;
    if (endOfOptions >= 0 && endOfOptions < i) return;
    // sh -c SCRIPT NAME ARG…: what follows the script is $0, $1, …, never an option.
    if (shell > 0 && i >= shell + 2) return;
    out.push({
      code: "InstructionReadAsOption",
      path: ["command", i],
      message: `command[${i}] starts with the instruction where the harness still parses options: an instruction that starts with "-" (such as "--version") would be read as an option, not as the prompt.`,
    });
  });
  return out;
}
