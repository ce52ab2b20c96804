import { Command, CommanderError } from "commander";
import { isReinsError } from "../compiler/index.js";
import { registerCommands } from "./commands/index.js";
import { EXIT } from "./exit-codes.js";

const program = new Command();
program
  .name("reins")
  .description("Train LLM agents with RL through real agent harnesses, described in YAML.")
  .version("0.1.0")
  .showSuggestionAfterError(true)
  .exitOverride();

registerCommands(program);

process.on("SIGINT", () => process.exit(EXIT.interrupted));

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode === 0 ? 0 : EXIT.usage;
  } else if (isReinsError(err)) {
    process.stderr.write(`error[${err.code}]: ${err.message}\n  hint: ${err.hint}\n`);
    process.exitCode = EXIT.failed;
  } else {
    process.stderr.write(`reins: internal error: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exitCode = 70;
  }
}
