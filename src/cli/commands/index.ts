import type { Command } from "commander";
import { register as validate } from "./validate.js";
import { register as render } from "./render.js";
import { register as plan } from "./plan.js";
import { register as diff } from "./diff.js";
import { register as schema } from "./schema.js";
import { register as evaluate } from "./eval.js";
import { register as run } from "./run.js";
import { register as trajectories } from "./trajectories.js";
import { register as proxy } from "./proxy.js";
import { register as init } from "./init.js";
import { register as view } from "./view.js";
import { register as synth } from "./synth.js";

/** Each command module exports `register(program)`. Order = order in `reins --help`. */
export function registerCommands(program: Command): void {
  for (const r of [init, validate, render, plan, run, evaluate, synth, proxy, trajectories, view, diff, schema]) r(program);
}
