/**
 * A harness problem: something about installing or launching a harness that went wrong and that a
 * user (or the infrastructure) can fix. Problems are values; `throw` is kept for bugs.
 */
export interface HarnessProblem {
  /** Permanent PascalCase code, e.g. `HarnessInstallFailed`. */
  code: string;
  /** What happened. */
  message: string;
  /** What to do about it. */
  hint: string;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; problem: HarnessProblem };

export function succeed<T>(value: T): Outcome<T> {
  return { ok: true, value };
}

export function fail<T = never>(code: string, message: string, hint: string): Outcome<T> {
  return { ok: false, problem: { code, message, hint } };
}
