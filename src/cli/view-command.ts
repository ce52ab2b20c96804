/**
 * The `reins view RUN_DIR` command of a run, as the user can paste it into the shell they ran
 * reins from: the run directory relative to the current directory when it is inside it, else
 * absolute; quoted when the shell would split or expand it.
 */
import { isAbsolute, relative, resolve } from "node:path";

export function viewCommand(runDir: string, cwd: string = process.cwd()): string {
  const abs = resolve(cwd, runDir);
  const rel = relative(cwd, abs);
  const shown = rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? rel : abs;
  return `reins view ${shellQuote(shown)}`;
}

export function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
