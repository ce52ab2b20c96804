import { Command } from "commander";
import { registerCommands } from "./commands/index.js";
import { EXIT } from "./exit-codes.js";
import { runProgram } from "./program.js";

const program = new Command();
program
  .name("reins")
  .description("Train LLM agents with RL through real agent harnesses, described in YAML.")
  .version("0.1.0")
  .showSuggestionAfterError(true)
  .exitOverride();

registerCommands(program);

process.on("SIGINT", () => process.exit(EXIT.interrupted));
// A reader that stops early (`reins validate --json | head`) is not a failure of reins. A closed
// stdout ends a short command quietly (exit 0); a command that holds sandboxes (run, eval) stops
// as on Ctrl-C, cleaning up first. Talk on a closed stderr is dropped: the work and its exit code
// go on (a supervisor that times a run out may close the pipes before its signal is handled).
const GONE = new Set(["EPIPE", "ERR_STREAM_DESTROYED"]);
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (!GONE.has(error.code ?? "")) throw error;
  if (process.listenerCount("SIGTERM") > 0) process.emit("SIGTERM", "SIGTERM");
  else process.exit(EXIT.ok);
});
process.stderr.on("error", (error: NodeJS.ErrnoException) => {
  if (!GONE.has(error.code ?? "")) throw error;
});

await runProgram(program);
