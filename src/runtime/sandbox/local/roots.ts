/**
 * A local sandbox's capped writable roots as the runner reaches them. Each is a tmpfs bwrap made
 * in the sandbox's own mount namespace (keeper-args.ts); right after the keeper is ready the
 * runner opens each root's directory through /proc/<pid 1>/root and holds the descriptor until
 * destroy. Files are then reached below /proc/self/fd/<n>: the descriptor pins that very
 * filesystem, so a reused pid can never lead to another sandbox's files, and host-side access
 * stays symlink-safe (files/host-files.ts resolves every path below the root).
 */
import { closeSync, constants, fchownSync, fstatSync, openSync, statfsSync, symlinkSync } from "node:fs";
import path from "node:path";
import type { StateDirs } from "../base-provider.js";
import { isProcessAlive } from "../host/process-tree.js";
import { SANDBOX_HOME, SANDBOX_TMP, SANDBOX_WORKSPACE } from "../layout.js";

const TMPFS_MAGIC = 0x01021994;

export interface SandboxRoots {
  /** Where the runner reaches each root (/proc/self/fd/<n>). */
  dirs: StateDirs;
  /** Lets the roots go: their memory is freed once the sandbox's processes are gone too. */
  close(): void;
}

/**
 * Opens the roots of the sandbox whose pid 1 is `pid` and gives them to the sandbox user. Also
 * links `<stateDir>/workspace` to the workspace, for diagnostics.
 */
export function openRoots(pid: number, stateDir: string, owner: { uid: number; gid: number }): SandboxRoots {
  const fds: number[] = [];
  const close = (): void => {
    for (const fd of fds.splice(0)) closeSync(fd);
  };
  try {
    const open = (at: string): string => {
      const fd = openSync(`/proc/${pid}/root${at}`, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      fds.push(fd);
      const dir = `/proc/self/fd/${fd}`;
      // A fresh tmpfs still root's: the one bwrap just made, not one of a process that took the pid.
      if (statfsSync(dir).type !== TMPFS_MAGIC || fstatSync(fd).uid !== 0) throw new Error(`${at} in the sandbox is not its own tmpfs`);
      fchownSync(fd, owner.uid, owner.gid);
      return dir;
    };
    const dirs = { workspace: open(SANDBOX_WORKSPACE), home: open(SANDBOX_HOME), tmp: open(SANDBOX_TMP) };
    if (!isProcessAlive(pid)) throw new Error("the sandbox ended while it was being set up");
    symlinkSync(`/proc/${pid}/root${SANDBOX_WORKSPACE}`, path.join(stateDir, "workspace"));
    return { dirs, close };
  } catch (error) {
    close();
    throw error;
  }
}
