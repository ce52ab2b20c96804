/** A `reins` program with only the trajectories command, for running it as a real process in tests. */
import { Command } from "commander";
import { register } from "../../src/cli/commands/trajectories.js";
import { runProgram } from "../../src/cli/program.js";

const program = new Command().name("reins").exitOverride();
register(program);
await runProgram(program);
