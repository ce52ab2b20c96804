/**
 * The layering of reins, as rules (`npx depcruise src --config .dependency-cruiser.cjs`; run by
 * scripts/test.sh and test/layering.test.ts). DESIGN.md §2: the compiler never imports the
 * runtime; the runtime reaches the compiler only through its front door and the plan contract;
 * the CLI and the public testing module reach each layer only through its front door; the record
 * format and the trajectories are leaves; nothing in src/ is circular.
 *
 * Parser: swc. dependency-cruiser parses TypeScript with the `typescript` package (< 7) or with
 * swc; reins uses TypeScript 7, whose package has no compiler API, so swc it is. swc does not tell
 * `import type` apart, so every import counts here, type-only ones included. The one place where
 * a type-only import is allowed (the contract naming types derived from the zod schemas in
 * src/compiler/schema) is let through by path here, and test/layering.test.ts checks that those
 * imports are `import type`.
 */
const FRONT_DOORS = "^src/(compiler|runtime)/index\\.ts$";

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import cycles anywhere in src/.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "compiler-is-below-runtime-and-cli",
      comment: "src/compiler never imports src/runtime or src/cli.",
      severity: "error",
      from: { path: "^src/compiler/" },
      to: { path: "^src/(runtime|cli|testing)/" },
    },
    {
      name: "runtime-is-below-cli",
      comment: "src/runtime never imports src/cli (or the public testing module).",
      severity: "error",
      from: { path: "^src/runtime/" },
      to: { path: "^src/(cli|testing)/" },
    },
    {
      name: "runtime-uses-compiler-front-door",
      comment: "src/runtime reaches the compiler only through src/compiler/index.ts and src/compiler/contract/.",
      severity: "error",
      from: { path: "^src/runtime/" },
      to: { path: "^src/compiler/", pathNot: "^src/compiler/(index\\.ts$|contract/)" },
    },
    {
      name: "trajectories-are-pure",
      comment: "src/runtime/trajectories never imports the proxy, the sandboxes or the executor: the record format is its input.",
      severity: "error",
      from: { path: "^src/runtime/trajectories/" },
      to: { path: "^src/runtime/(proxy|sandbox|executor)/" },
    },
    {
      name: "records-are-a-leaf",
      comment: "src/runtime/records imports nothing else of the runtime.",
      severity: "error",
      from: { path: "^src/runtime/records/" },
      to: { path: "^src/runtime/", pathNot: "^src/runtime/records/" },
    },
    {
      name: "contract-is-a-leaf",
      comment: "src/compiler/contract imports nothing of reins outside itself (types from src/compiler/schema excepted: see the header).",
      severity: "error",
      from: { path: "^src/compiler/contract/" },
      to: { path: "^src/", pathNot: "^src/compiler/(contract|schema)/" },
    },
    {
      name: "cli-uses-front-doors",
      comment: "src/cli reaches the compiler and the runtime only through their index.ts.",
      severity: "error",
      from: { path: "^src/cli/" },
      to: { path: "^src/(compiler|runtime)/", pathNot: FRONT_DOORS },
    },
    {
      name: "testing-uses-front-doors",
      comment: "src/testing (the public reins/testing module) reaches the compiler and the runtime only through their index.ts.",
      severity: "error",
      from: { path: "^src/testing/" },
      to: { path: "^src/(compiler|runtime|cli)/", pathNot: FRONT_DOORS },
    },
    {
      name: "not-to-unresolvable",
      comment: "Every relative import resolves to a file.",
      severity: "error",
      from: { path: "^src/" },
      to: { couldNotResolve: true, path: "^\\." },
    },
  ],
  options: {
    parser: "swc",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)node_modules/" },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".mjs", ".cjs", ".json"] },
  },
};
