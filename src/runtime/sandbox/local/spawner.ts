/**
 * The spawner (spawn.c): one small process per runner that starts the local provider's keepers
 * and commands, so the runner never forks itself. Node's spawn forks the whole runner: it blocks
 * the event loop (the proxy's streams included) about 1 ms per 50 MB the runner holds; the
 * spawner's fork costs the same small amount whatever the runner holds.
 *
 * It listens on a Unix socket in a directory of its own (0700, under the host's temporary
 * directory, which no sandbox sees) and lives as long as a provider holds it and the runner lives:
 * its stdin is a pipe from the runner. What it starts does not depend on it once started: a
 * keeper's lifeline is the runner's own connection, a command's relay is a process of its own.
 * Shared by the providers of one process (counted; the last release stops it).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export type SpawnKind = "keeper" | "command";

export interface SpawnRequest {
  kind: SpawnKind;
  /** Absolute path of the program, then its arguments. */
  argv: string[];
  env: Record<string, string>;
  /** A file the program gets as fd 3, created 0600 (keepers: bwrap's --info-fd). */
  fd3?: string;
}

/** The request as spawn.c reads it: a u32 LE length, then NUL-terminated fields. */
export function encodeRequest(request: SpawnRequest): Buffer {
  const env = Object.entries(request.env).map(([k, v]) => `${k}=${v}`);
  const fields = [request.kind, request.fd3 ?? "", String(request.argv.length), ...request.argv, String(env.length), ...env];
  if (fields.some((f) => f.includes("\0"))) throw new Error("a NUL byte in a command line or environment");
  const body = Buffer.from(fields.map((f) => `${f}\0`).join(""), "utf8");
  const head = Buffer.alloc(4);
  head.writeUInt32LE(body.length);
  return Buffer.concat([head, body]);
}

export class Spawner {
  private users = 1;
  private gone = false;

  private constructor(
    private readonly child: ChildProcess,
    readonly socketPath: string,
    private readonly dir: string,
    private readonly onGone: () => void,
  ) {
    child.once("exit", () => this.end());
  }

  /** Starts the spawner; null when it cannot start (reins then spawns its processes itself). */
  static start(binary: string, onGone: () => void): Promise<Spawner | null> {
    let dir: string;
    try {
      dir = mkdtempSync(path.join(os.tmpdir(), "reins-spawn-"));
    } catch {
      return Promise.resolve(null);
    }
    const socketPath = path.join(dir, "s");
    const child = spawn(binary, [socketPath], { env: {}, stdio: ["pipe", "pipe", "ignore"], detached: true });
    child.stdin?.on("error", () => undefined);
    return new Promise((resolve) => {
      const fail = (): void => {
        child.kill("SIGKILL");
        rmSync(dir, { recursive: true, force: true });
        resolve(null);
      };
      const timer = setTimeout(fail, 10_000);
      let said = "";
      child.once("error", () => {
        clearTimeout(timer);
        fail();
      });
      child.stdout?.on("data", (chunk: Buffer) => {
        said += chunk.toString();
        if (!said.includes("listening\n")) return;
        clearTimeout(timer);
        child.stdout?.removeAllListeners("data");
        child.stdout?.resume();
        // The spawner keeps no runner alive: it ends with the runner (its stdin) or the last release.
        child.unref();
        for (const stream of [child.stdin, child.stdout]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
        resolve(new Spawner(child, socketPath, dir, onGone));
      });
      child.once("exit", () => {
        clearTimeout(timer);
        rmSync(dir, { recursive: true, force: true });
        resolve(null);
      });
    });
  }

  get alive(): boolean {
    return !this.gone;
  }

  /** One more holder of this spawner. */
  retain(): void {
    this.users++;
  }

  /** One holder less; the last one stops it. */
  release(): void {
    if (--this.users > 0 || this.gone) return;
    this.child.stdin?.end();
    this.child.kill("SIGTERM");
    this.end();
  }

  /**
   * Connects and sends one request; the socket then carries what spawn.c says of it. A command's
   * socket stays open for output when the runner has ended its stdin; a keeper's closes when the
   * keeper has ended.
   */
  open(request: SpawnRequest, sent?: () => void): net.Socket {
    const socket = net.connect({ path: this.socketPath, allowHalfOpen: request.kind === "command" });
    socket.write(encodeRequest(request), sent && (() => sent()));
    return socket;
  }

  private end(): void {
    if (this.gone) return;
    this.gone = true;
    rmSync(this.dir, { recursive: true, force: true });
    this.onGone();
  }
}

let shared: { binary: string; spawner: Promise<Spawner | null> } | null = null;

/** The process's spawner for `binary`, started if needed and retained for the caller. */
export async function acquireSpawner(binary: string): Promise<Spawner | null> {
  if (!shared || shared.binary !== binary) {
    const entry = { binary, spawner: Promise.resolve<Spawner | null>(null) };
    entry.spawner = Spawner.start(binary, () => {
      if (shared === entry) shared = null;
    });
    shared = entry;
    const spawner = await entry.spawner;
    if (!spawner && shared === entry) shared = null;
    return spawner;
  }
  const spawner = await shared.spawner;
  if (spawner?.alive) spawner.retain();
  return spawner?.alive ? spawner : acquireSpawner(binary);
}
