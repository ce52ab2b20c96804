/**
 * A host uid of its own for each local sandbox: leased from a range, one lease file per uid under
 * the state root (`.uids/<uid>`, created exclusively, naming the sandbox's state directory), so
 * concurrent runners sharing the root never hand out the same uid twice. A sandbox with its own uid
 * cannot signal, ptrace or read what another sandbox's user owns even if it could see it, and
 * per-user kernel limits (processes, inotify, keyrings) are its own.
 */
import { randomInt } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";

export interface UidRange {
  first: number;
  count: number;
}

/** Far above login users and the usual subordinate-uid ranges (100000 + 65536 × n). */
export const DEFAULT_UID_RANGE: UidRange = { first: 1_900_000_000, count: 1_000_000 };

function leaseDir(stateRoot: string): string {
  return path.join(stateRoot, ".uids");
}

/** Leases a free uid for the sandbox whose state directory is `stateDir`. */
export function leaseUid(stateRoot: string, stateDir: string, range: UidRange = DEFAULT_UID_RANGE): number {
  const dir = leaseDir(stateRoot);
  mkdirSync(dir, { recursive: true });
  for (let attempt = 0; attempt < 64; attempt++) {
    const uid = range.first + randomInt(range.count);
    try {
      writeFileSync(path.join(dir, String(uid)), path.basename(stateDir), { flag: "wx" });
      return uid;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }
  throw new Error(`no free uid in ${range.first}..${range.first + range.count - 1}`);
}

export function releaseUid(stateRoot: string, uid: number): void {
  try {
    unlinkSync(path.join(leaseDir(stateRoot), String(uid)));
  } catch {
    /* released already */
  }
}

/** Releases leases whose sandbox state directory no longer exists (a runner died holding them). */
export function pruneUidLeases(stateRoot: string): number {
  const dir = leaseDir(stateRoot);
  let removed = 0;
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    let owner = "";
    try {
      owner = readFileSync(path.join(dir, name), "utf8").trim();
    } catch {
      continue;
    }
    if (owner && existsSync(path.join(stateRoot, owner))) continue;
    try {
      unlinkSync(path.join(dir, name));
      removed++;
    } catch {
      /* gone */
    }
  }
  return removed;
}
