/** A `reins` program with only the trajectories command, for running it as a real process in tests. */
import { Command, CommanderError } from "commander";
import { register } from "../../src/cli/commands/trajectories.js";
import { EXIT } from "../../src/cli/exit-codes.js";

const program = new Command().name("reins").exitOverride();
register(program);
try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (!(err instanceof CommanderError)) throw err;
  process.exitCode = err.exitCode === 0 ? 0 : EXIT.usage;
}
