/**
 * Trainer failures, in plain words. `code` is permanent:
 * - TrainerStartFailed: the worker process did not come up (missing python/torch, bad model dir, …)
 * - TrainerDied: the worker process exited while in use
 * - TrainerUnreachable: no answer on its port although the process is alive
 * - TrainerRefused: the worker refused a request (the worker's own code is in `workerCode`,
 *   e.g. NonFiniteLoss, NonFiniteBatch, BadBatch, NoGradients)
 * - ProtocolMismatch: client and worker speak different protocol versions
 */
export type TrainerErrorCode = "TrainerStartFailed" | "TrainerDied" | "TrainerUnreachable" | "TrainerRefused" | "ProtocolMismatch";

export class TrainerError extends Error {
  constructor(
    readonly code: TrainerErrorCode,
    message: string,
    readonly hint: string,
    readonly workerCode?: string,
  ) {
    super(message);
    this.name = "TrainerError";
  }
}
