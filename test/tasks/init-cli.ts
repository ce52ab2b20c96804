// A reins program with only `init` registered, for the init tests (run with node --import tsx).
import { Command } from "commander";
import { register } from "../../src/cli/commands/init.js";
import { runProgram } from "../../src/cli/program.js";

const program = new Command().name("reins").exitOverride();
register(program);
await runProgram(program);
