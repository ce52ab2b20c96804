/**
 * reins as a library (`import { compiler, runtime } from "reins"`): the compiler's and the
 * runtime's front doors, as the CLI uses them.
 */
export * as compiler from "./compiler/index.js";
export * as runtime from "./runtime/index.js";
