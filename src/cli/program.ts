/**
 * Runs a commander program the way `reins` does: usage errors exit 2; any failure a command
 * throws, or that escapes it later, is printed once by the failure renderer (failure.ts).
 */
import { type Command, CommanderError } from "commander";
import { EXIT } from "./exit-codes.js";
import { renderFailure } from "./failure.js";
import { useColor } from "./render/diagnostics.js";

/** Print a failure (stderr, or stdout JSON with --json) and return its exit code. */
export function reportFailure(err: unknown, argv: readonly string[] = process.argv): number {
  const out = renderFailure(err, { json: argv.includes("--json"), debug: process.env.REINS_DEBUG === "1", color: useColor() });
  if (out.stdout) process.stdout.write(out.stdout);
  if (out.stderr) process.stderr.write(out.stderr);
  return out.exitCode;
}

export async function runProgram(program: Command, argv: readonly string[] = process.argv): Promise<void> {
  const stop = (err: unknown) => {
    process.exitCode = reportFailure(err, argv);
    process.exit();
  };
  process.on("uncaughtException", stop);
  process.on("unhandledRejection", stop);
  try {
    refuseUnknownCommand(program, argv);
    await program.parseAsync([...argv]);
  } catch (err) {
    if (err instanceof CommanderError) process.exitCode = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    else process.exitCode = reportFailure(err, argv);
  }
}

/**
 * `reins nosuch --help` is an unknown command, not a request for the program's help (commander
 * answers a help flag before it looks at the command's name): exit 2 with the commands' names.
 */
function refuseUnknownCommand(program: Command, argv: readonly string[]): void {
  const first = argv.slice(2).find((a) => !a.startsWith("-"));
  if (first === undefined || first === "help") return;
  const names = program.commands.flatMap((c) => [c.name(), ...c.aliases()]);
  if (names.includes(first)) return;
  program.error(`error: unknown command '${first}'; the commands are ${names.join(", ")} (reins --help says what each does)`, {
    exitCode: EXIT.usage,
    code: "commander.unknownCommand",
  });
}
