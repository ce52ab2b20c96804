/**
 * Load and resolve: spec files → the resolved world, every problem reported, none thrown. The one
 * place the compiler falls back to the process's cwd and environment when a caller gives none.
 */
import { resolve } from "node:path";
import { sortDiagnostics, type Result } from "./contract/diagnostics.js";
import { loadSpecs, type LoadOptions, type LoadedSpecs } from "./load.js";
import { resolveWorld, type World } from "./resolve/world.js";

export interface Loaded {
  loaded: LoadedSpecs;
  world: World;
}

export type Settled = Required<Pick<LoadOptions, "cwd" | "env" | "builtins">> & Pick<LoadOptions, "projectRoot">;

/**
 * Options with their defaults: cwd (made absolute) and env of the process, the shipped library on;
 * the project root, when given, kept (its default depends on the paths, see load.ts).
 */
export function settle(opts: LoadOptions): Settled {
  const settled: Settled = { cwd: resolve(opts.cwd ?? process.cwd()), env: opts.env ?? process.env, builtins: opts.builtins ?? true };
  if (opts.projectRoot !== undefined) settled.projectRoot = opts.projectRoot;
  return settled;
}

export function loadAndResolve(paths: readonly string[], opts: LoadOptions = {}): Result<Loaded> {
  const settled = settle(opts);
  const loaded = loadSpecs(paths, settled);
  const world = resolveWorld(loaded.value.documents, loaded.value.builtins, settled.env);
  return { value: { loaded: loaded.value, world: world.value }, diagnostics: sortDiagnostics([...loaded.diagnostics, ...world.diagnostics]) };
}
