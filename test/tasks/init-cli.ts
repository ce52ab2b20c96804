// A reins program with only `init` registered, for the init tests (run with node --import tsx).
import { Command, CommanderError } from "commander";
import { register } from "../../src/cli/commands/init.js";

const program = new Command().name("reins").exitOverride();
register(program);
try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exitCode = err.exitCode === 0 ? 0 : 2;
  else throw err;
}
