import type { Code } from "../../compiler/contract/codes.js";
import { ReinsError } from "../../compiler/contract/problem.js";
import type { SandboxProcess } from "./provider.js";

/**
 * Infrastructure failures of a sandbox. These are retried by the executor and never become a
 * reward; a command that merely exits non-zero is not one of them.
 */

export type SandboxErrorKind = "create-failed" | "died" | "exec-failed" | "timeout";

const SANDBOX_CODES = {
  "create-failed": "SandboxCreateFailed",
  died: "SandboxDied",
  "exec-failed": "SandboxExecFailed",
  timeout: "SandboxTimeout",
} as const satisfies Record<SandboxErrorKind, Code>;

export class SandboxError extends ReinsError {
  readonly kind: SandboxErrorKind;
  /** Permanent PascalCase code derived from the kind. */
  declare readonly code: (typeof SANDBOX_CODES)[SandboxErrorKind];
  readonly sandboxId: string;

  /** `hint` defaults to the catalogue's hint for the kind's code. */
  constructor(kind: SandboxErrorKind, sandboxId: string, message: string, hint = "", options?: { cause?: unknown }) {
    super(SANDBOX_CODES[kind], message, hint, options);
    this.kind = kind;
    this.sandboxId = sandboxId;
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
