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
 *
 * Started through the spawner (spawner.ts), the keeper's stdin, stdout and stderr are one
 * connection the runner holds: the lifeline is the same, and the runner's memory is not forked.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { PassThrough, type Readable } from "node:stream";
import { signalQuietly } from "../host/process-tree.js";
import { SandboxError } from "../sandbox-error.js";
import type { Spawner } from "./spawner.js";

export interface Keeper {
  /** Host pid of the keeper's first process (its confining shell, then bwrap). */
  pid: number;
  /** Host pid of the sandbox's pid 1. */
  childPid: number;
  /** Settles once the keeper has ended. */
  ended: Promise<void>;
}

/** A started keeper as startKeeper watches it, however it was started. */
interface KeeperProcess {
  /** What the keeper says ("ready"), and its errors where they are not apart. */
  output: Readable;
  errors?: Readable;
  /** Its pid, once known (the spawner says it first: "pid N"). */
  pid(): number | undefined;
  ended: Promise<string>;
}

/** The sandbox's pid 1 as bwrap wrote it to its info file; 0 when not (yet) there. */
function readChildPid(infoFile: string): number {
  try {
    return Number(/"child-pid"\s*:\s*(\d+)/.exec(readFileSync(infoFile, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** The runner forks itself: `argv` with fd 3 open on `infoFile`. */
function spawnKeeper(argv: string[], infoFile: string, launched: () => void): KeeperProcess {
  const info = openSync(infoFile, "w", 0o600);
  try {
    const child = spawn(argv[0], argv.slice(1), { env: {}, stdio: ["pipe", "pipe", "pipe", info] });
    // The lifeline: never written, never ended; closed by the kernel when this process dies.
    child.stdin?.on("error", () => undefined);
    launched();
    const ended = new Promise<string>((resolve) => {
      child.on("error", (error) => resolve(`cannot run bwrap: ${error.message}`));
      child.on("exit", (code, signal) => resolve(`bwrap exited (${signal ?? code})`));
    });
    return { output: child.stdout!, errors: child.stderr!, pid: () => child.pid, ended };
  } finally {
    closeSync(info);
  }
}

/** The spawner starts it on a connection: its stdin (the lifeline), stdout and stderr at once. */
function serveKeeper(spawner: Spawner, argv: string[], infoFile: string, launched: () => void): KeeperProcess {
  const socket = spawner.open({ kind: "keeper", argv, env: {}, fd3: infoFile }, launched);
  let pid: number | undefined;
  let head = "";
  const output = new PassThrough();
  socket.on("data", (chunk: Buffer) => {
    if (pid !== undefined) return void output.write(chunk);
    head += chunk.toString("latin1");
    const line = /^pid (\d+)\n/.exec(head);
    if (!line) return;
    pid = Number(line[1]);
    output.write(Buffer.from(head.slice(line[0].length), "latin1"));
  });
  socket.on("error", () => undefined);
  const ended = new Promise<string>((resolve) => socket.on("close", () => resolve("the keeper ended")));
  return { output, pid: () => pid, ended };
}

/**
 * Starts a keeper: through the spawner when there is one, else by forking the runner. Ready once
 * its script said "ready"; rejects with what bwrap said when it ends before. `launched` is called
 * once the keeper's start is out of the runner's hands (its request sent, or its process forked).
 */
export function startKeeper(
  argv: string[],
  id: string,
  infoFile: string,
  timeoutMs: number,
  spawner?: Spawner,
  launched: () => void = () => undefined,
): Promise<Keeper> {
  const keeper = spawner ? serveKeeper(spawner, argv, infoFile, launched) : spawnKeeper(argv, infoFile, launched);
  const ended = keeper.ended.then(() => undefined);
  return new Promise<Keeper>((resolve, reject) => {
    let out = "";
    let err = "";
    let done = false;
    const fail = (kind: "create-failed" | "timeout", message: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const pid = keeper.pid();
      if (pid !== undefined) signalQuietly(pid);
      const childPid = readChildPid(infoFile);
      if (childPid) signalQuietly(childPid);
      reject(
        new SandboxError(kind, id, message, kind === "timeout" ? "the machine may be overloaded; lower the concurrency" : "see the message from bubblewrap"),
      );
    };
    const timer = setTimeout(() => fail("timeout", `sandbox not ready after ${timeoutMs} ms`), timeoutMs);
    keeper.output.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (done || !out.includes("ready\n")) return;
      const childPid = readChildPid(infoFile);
      const pid = keeper.pid();
      if (!childPid || pid === undefined) return fail("create-failed", "bwrap did not tell the sandbox's pid 1");
      done = true;
      clearTimeout(timer);
      keeper.output.removeAllListeners("data");
      keeper.output.resume();
      resolve({ pid, childPid, ended });
    });
    keeper.errors?.on("data", (chunk: Buffer) => {
      if (err.length < 4096) err += chunk.toString();
    });
    void keeper.ended.then((how) => {
      const said = (keeper.errors ? err : out.replace(/^ready\n/, "")).trim().slice(0, 4096);
      setImmediate(() => fail("create-failed", `${how} before the sandbox was ready: ${said || "no message"}`));
    });
  });
}
