import type { SandboxProcess } from "./provider.js";

/**
 * Infrastructure failures of a sandbox. These are retried by the executor and never become a
 * reward; a command that merely exits non-zero is not one of them.
 */

export type SandboxErrorKind = "create-failed" | "died" | "exec-failed" | "timeout";

const CODES: Record<SandboxErrorKind, string> = {
  "create-failed": "SandboxCreateFailed",
  died: "SandboxDied",
  "exec-failed": "SandboxExecFailed",
  timeout: "SandboxTimeout",
};

export class SandboxError extends Error {
  readonly kind: SandboxErrorKind;
  /** Permanent PascalCase code derived from the kind. */
  readonly code: string;
  readonly sandboxId: string;
  readonly hint: string;

  constructor(kind: SandboxErrorKind, sandboxId: string, message: string, hint = "", options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SandboxError";
    this.kind = kind;
    this.code = CODES[kind];
    this.sandboxId = sandboxId;
    this.hint = hint;
  }
}

export function isSandboxError(error: unknown): error is SandboxError {
  return error instanceof SandboxError;
}

export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** A SandboxProcess that failed before it started: wait() rejects with the error. */
export function failedProcess(error: SandboxError): SandboxProcess {
  const failed = Promise.reject(error);
  failed.catch(() => undefined);
  return { wait: () => failed, kill: async () => undefined };
}
