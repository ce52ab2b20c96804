/**
 * A full disk (ENOSPC) or an exhausted quota (EDQUOT) while writing a run directory is not a bug
 * of reins: it is DiskFull, naming the file and the run directory, with what to do. The writers of
 * the run store leave nothing half-written when it happens (./run-store.ts: a temporary file is
 * removed, an append is cut back to where it started).
 */
import { dirname } from "node:path";
import { CODES, ReinsError } from "../../compiler/index.js";

const FULL: Record<string, string> = { ENOSPC: "no space left on the device", EDQUOT: "the disk quota is exceeded" };

/** Whether `err` says the file system is full (ENOSPC) or the user's quota is spent (EDQUOT). */
export function isDiskFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" && code in FULL;
}

/**
 * The error to throw for `err`, raised while writing `file` of the run directory `runDir`: DiskFull
 * for a full disk or quota, `err` itself otherwise.
 */
export function diskFullOr(err: unknown, file: string, runDir: string = dirname(file)): unknown {
  if (!isDiskFull(err)) return err;
  const why = FULL[(err as NodeJS.ErrnoException).code!]!;
  return new ReinsError(
    "DiskFull",
    `Cannot write ${file}: ${why}; the run in ${runDir} stopped there, with nothing half-written.`,
    `${CODES.DiskFull.replace(/ DIR/, ` ${runDir}`)}`,
    { cause: err },
  );
}
