/** Small I/O helpers for commands: JSON on stdout, talk on stderr, exit codes. */
import type { Diagnostic } from "../compiler/index.js";
import { renderDiagnostics } from "./render/diagnostics.js";

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function say(text: string): void {
  process.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
}

export function reportDiagnostics(diagnostics: readonly Diagnostic[], json: boolean): void {
  if (!json && diagnostics.length > 0) process.stderr.write(renderDiagnostics(diagnostics));
}

export function errorCount(diagnostics: readonly Diagnostic[]): number {
  return diagnostics.filter((d) => d.severity === "error").length;
}
