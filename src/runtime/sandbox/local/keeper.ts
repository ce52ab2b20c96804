/**
 * Starting a local sandbox's keeper: the bwrap process that holds its namespaces (behind its
 * confining shell, which has already joined the sandbox's groups). Ready once bwrap has told the
 * host pid of the sandbox's pid 1 (info fd 3) and the keeper script said "ready" (its proxy
 * forwarder listens).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { signalQuietly } from "../host/process-tree.js";
import { SandboxError } from "../sandbox-error.js";

export interface Keeper {
  process: ChildProcess;
  /** Host pid of the sandbox's pid 1. */
  childPid: number;
}

export function startKeeper(bwrap: string, args: string[], id: string, timeoutMs: number): Promise<Keeper> {
  const keeper = spawn(bwrap, args, { env: {}, stdio: ["ignore", "pipe", "pipe", "pipe"] });
  return new Promise<Keeper>((resolve, reject) => {
    let info = "";
    let out = "";
    let err = "";
    let childPid = 0;
    let ready = false;
    let done = false;
    const fail = (kind: "create-failed" | "timeout", message: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      keeper.kill("SIGKILL");
      if (childPid) signalQuietly(childPid);
      reject(new SandboxError(kind, id, message, kind === "timeout" ? "the machine may be overloaded; lower the concurrency" : "see the message from bubblewrap"));
    };
    const check = (): void => {
      if (done || !ready || !childPid) return;
      done = true;
      clearTimeout(timer);
      keeper.stdout?.removeAllListeners("data");
      keeper.stdout?.resume();
      resolve({ process: keeper, childPid });
    };
    const timer = setTimeout(() => fail("timeout", `sandbox not ready after ${timeoutMs} ms`), timeoutMs);
    const infoStream = keeper.stdio[3] as NodeJS.ReadableStream | null;
    infoStream?.on("data", (chunk: Buffer) => {
      info += chunk.toString();
      const m = /"child-pid"\s*:\s*(\d+)/.exec(info);
      if (m && !childPid) {
        childPid = Number(m[1]);
        check();
      }
    });
    keeper.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("ready\n")) {
        ready = true;
        check();
      }
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
