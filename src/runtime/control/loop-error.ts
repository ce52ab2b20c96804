/** A plain-words failure of the loop (trainer, engine reload, bad step): the run stops, resumable. */
export class LoopError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly hint: string,
  ) {
    super(message);
  }
}
