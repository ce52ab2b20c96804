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
// A reader that stops early (`reins validate --json | head`) is not a failure of reins: stop quietly.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(EXIT.ok);
    throw error;
  });
}

await runProgram(program);
