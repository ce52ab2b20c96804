import type { Code } from "../../compiler/contract/codes.js";
import { ReinsError } from "../../compiler/contract/problem.js";

/** A plain-words failure of the loop (trainer, engine reload, bad step): the run stops, resumable. */
export class LoopError extends ReinsError {
  constructor(code: Code, message: string, hint: string) {
    super(code, message, hint);
  }
}
