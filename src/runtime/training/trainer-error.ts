/**
 * Trainer failures, in plain words. `code` is permanent:
 * - TrainerStartFailed: the worker process did not come up (missing python/torch, bad model dir, …)
 * - TrainerDied: the worker process exited while in use
 * - TrainerUnreachable: no answer on its port although the process is alive
 * - TrainerRefused: the worker refused a request (the worker's own code is in `workerCode`,
 *   e.g. NonFiniteLoss, NonFiniteBatch, BadBatch, NoGradients)
 * - ProtocolMismatch: client and worker speak different protocol versions
 */
import { ReinsError } from "../../compiler/contract/problem.js";

export type TrainerErrorCode = "TrainerStartFailed" | "TrainerDied" | "TrainerUnreachable" | "TrainerRefused" | "ProtocolMismatch";

export class TrainerError extends ReinsError {
  declare readonly code: TrainerErrorCode;

  constructor(
    code: TrainerErrorCode,
    message: string,
    hint: string,
    /** The worker's own code when it refused a request (not necessarily in the catalogue). */
    readonly workerCode?: string,
  ) {
    super(code, message, hint);
  }
}
