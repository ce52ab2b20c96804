/**
 * Starting a local sandbox's keeper: the bwrap process that holds its namespaces (behind its
 * confining shell, which has already joined the sandbox's groups). Ready once the keeper script
 * said "ready" (its proxy forwarder listens); bwrap has by then written the host pid of the
 * sandbox's pid 1 to the info file.
 *
 * The keeper dies with the runner however the runner dies, at any moment: bwrap's
 * --die-with-parent arms a parent-death signal only once bwrap runs, too late when the runner dies
 * while the confining shell works. So the keeper's stdin is a pipe the runner holds and never
 * writes: the keeper script reads end-of-file when the runner is gone and ends the sandbox
 * (keeper-args.ts). And bwrap writes its info to a file, not to a pipe to the runner: a write
 * to a dead runner's pipe would kill bwrap before it lets the sandbox's pid 1 go on, and that pid 1
 * would wait for it forever.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { signalQuietly } from "../host/process-tree.js";
import { SandboxError } from "../sandbox-error.js";

export interface Keeper {
  process: ChildProcess;
  /** Host pid of the sandbox's pid 1. */
  childPid: number;
}

/** The sandbox's pid 1 as bwrap wrote it to its info file; 0 when not (yet) there. */
function readChildPid(infoFile: string): number {
  try {
    return Number(/"child-pid"\s*:\s*(\d+)/.exec(readFileSync(infoFile, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Runs `shell args` with fd 3 open on `infoFile` (bwrap's --info-fd 3). */
export function startKeeper(shell: string, args: string[], id: string, infoFile: string, timeoutMs: number): Promise<Keeper> {
  const info = openSync(infoFile, "w", 0o600);
  let keeper: ChildProcess;
  try {
    keeper = spawn(shell, args, { env: {}, stdio: ["pipe", "pipe", "pipe", info] });
  } finally {
    closeSync(info);
  }
  // The lifeline: never written, never ended; closed by the kernel when this process dies.
  keeper.stdin?.on("error", () => undefined);
  return new Promise<Keeper>((resolve, reject) => {
    let out = "";
    let err = "";
    let done = false;
    const fail = (kind: "create-failed" | "timeout", message: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      keeper.kill("SIGKILL");
      const childPid = readChildPid(infoFile);
      if (childPid) signalQuietly(childPid);
      reject(new SandboxError(kind, id, message, kind === "timeout" ? "the machine may be overloaded; lower the concurrency" : "see the message from bubblewrap"));
    };
    const timer = setTimeout(() => fail("timeout", `sandbox not ready after ${timeoutMs} ms`), timeoutMs);
    keeper.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (done || !out.includes("ready\n")) return;
      const childPid = readChildPid(infoFile);
      if (!childPid) return fail("create-failed", "bwrap did not tell the sandbox's pid 1");
      done = true;
      clearTimeout(timer);
      keeper.stdout?.removeAllListeners("data");
      keeper.stdout?.resume();
      resolve({ process: keeper, childPid });
    });
    keeper.stderr?.on("data", (chunk: Buffer) => {
      if (err.length < 4096) err += chunk.toString();
    });
    keeper.on("error", (error) => fail("create-failed", `cannot run bwrap: ${error.message}`));
    keeper.on("exit", (code, signal) => {
      setImmediate(() => fail("create-failed", `bwrap exited (${signal ?? code}) before the sandbox was ready: ${err.trim() || "no message"}`));
    });
  });
}
