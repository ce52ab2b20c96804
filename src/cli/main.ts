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

await runProgram(program);
