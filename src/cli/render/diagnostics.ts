/** Human rendering of diagnostics: `file:line:col`, severity and code, message, code frame, hint. */
import { closeSync, constants, fstatSync, openSync, readFileSync, statSync } from "node:fs";
import { extname } from "node:path";
import pc from "picocolors";
import type { Diagnostic } from "../../compiler/index.js";

export function useColor(stream: NodeJS.WriteStream = process.stderr): boolean {
  if ("NO_COLOR" in process.env && process.env.NO_COLOR !== "") return false;
  if (process.argv.includes("--no-color")) return false;
  if ("FORCE_COLOR" in process.env) return true;
  return Boolean(stream.isTTY) && process.env.TERM !== "dumb";
}

/** Control characters (a binary file's bytes, an escape sequence) never reach the terminal raw. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function printable(text: string): string {
  return text.replace(CONTROL, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** Largest file a code frame is read from (the compiler's limit on a spec file). */
const MAX_FRAME_FILE_BYTES = 8 * 1024 * 1024;

/**
 * The text of a spec file for a code frame, or undefined: frames are shown only from spec files
 * (.yaml/.yml), regular and no larger than a spec may be, opened non-blocking. Whatever file a
 * diagnostic names, nothing else (a secret, a device, a FIFO) is ever printed or opened.
 */
export function readSpecText(file: string): string | undefined {
  if (![".yaml", ".yml"].includes(extname(file).toLowerCase())) return undefined;
  let fd: number | undefined;
  try {
    const st = statSync(file);
    if (!st.isFile() || st.size > MAX_FRAME_FILE_BYTES) return undefined;
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    const fst = fstatSync(fd);
    if (!fst.isFile() || fst.size > MAX_FRAME_FILE_BYTES) return undefined;
    return readFileSync(fd, "utf8");
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

export function renderDiagnostics(diagnostics: readonly Diagnostic[], color = useColor(), summary = true): string {
  const c = pc.createColors(color);
  const cache = new Map<string, string[] | null>();
  const lines = (file: string) => {
    if (!cache.has(file)) cache.set(file, readSpecText(file)?.split("\n") ?? null);
    return cache.get(file);
  };
  const out: string[] = [];
  for (const d of diagnostics) {
    const sev = d.severity === "error" ? c.red(c.bold("error")) : d.severity === "warning" ? c.yellow(c.bold("warning")) : c.blue("info");
    out.push(`${c.bold(printable(`${d.file}:${d.line}:${d.column}`))}: ${sev}[${d.code}]: ${printable(d.message)}`);
    const src = lines(d.file);
    if (src && d.line >= 1 && d.line <= src.length) {
      const text = src[d.line - 1]!.replace(/\t/g, " ");
      if (text.length <= 300 && !/[\u0000-\u001f\u007f-\u009f\ufffd]/.test(text)) {
        const num = String(d.line);
        out.push(`${c.dim(`${num} |`)} ${text}`);
        out.push(`${" ".repeat(num.length)} ${c.dim("|")} ${" ".repeat(Math.max(0, d.column - 1))}${c.red("^")}`);
      }
    }
    for (const n of d.notes ?? []) out.push(`  ${c.dim("note:")} ${printable(n)}`);
    out.push(`  ${c.cyan("hint:")} ${printable(d.hint)}`);
    out.push("");
  }
  const errors = diagnostics.filter((d) => d.severity === "error").length;
  const warnings = diagnostics.filter((d) => d.severity === "warning").length;
  if (summary && errors + warnings > 0) out.push(`${errors} error(s), ${warnings} warning(s)`);
  return out.join("\n") + (out.length > 0 ? "\n" : "");
}
