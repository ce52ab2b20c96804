/**
 * A local sandbox's command started by the spawner (spawner.ts, spawn.c): its relay sends the
 * program's pid, its stdout and stderr, and its exit status in frames (u8 type, u32 LE length,
 * payload) on one Unix connection; what the runner writes after the request is its stdin, and
 * the runner's half-close ends it. Settles like a host process (process-runner.ts): once the
 * program has ended and its output is closed.
 */
import { Readable } from "node:stream";
import type { CommandEnd, OutputSink } from "../command.js";
import type { Spawner } from "./spawner.js";

enum Frame {
  Pid = 0,
  Stdout = 1,
  Stderr = 2,
  Exit = 3,
  Failure = 4,
}

export interface ServedProcess {
  readonly done: Promise<CommandEnd>;
  kill(): Promise<void>;
}

export interface ServedOptions {
  env: Record<string, string>;
  stdin?: string | Uint8Array | Readable;
  /** Kills the tree below the program's pid; `ended` says when the program is gone. */
  killTree: (pid: number, ended: () => boolean) => Promise<void>;
}

/** Splits a byte stream into spawn.c's frames. */
export class FrameReader {
  private buffered: Buffer[] = [];
  private size = 0;

  constructor(private readonly onFrame: (type: number, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.buffered.push(chunk);
    this.size += chunk.length;
    if (this.size < 5) return;
    let data = this.buffered.length === 1 ? this.buffered[0] : Buffer.concat(this.buffered);
    let at = 0;
    while (data.length - at >= 5) {
      const length = data.readUInt32LE(at + 1);
      if (data.length - at - 5 < length) break;
      this.onFrame(data[at], data.subarray(at + 5, at + 5 + length));
      at += 5 + length;
    }
    data = data.subarray(at);
    this.buffered = data.length ? [data] : [];
    this.size = data.length;
  }
}

export function startServedProcess(spawner: Spawner, argv: string[], options: ServedOptions, sink?: OutputSink): ServedProcess {
  const socket = spawner.open({ kind: "command", argv, env: options.env });
  let pid = 0;
  let end: CommandEnd | null = null;
  let closed = false;
  let onPid: () => void = () => undefined;
  const pidKnown = new Promise<void>((resolve) => (onPid = resolve));
  const done = new Promise<CommandEnd>((resolve) => {
    const finish = (result: CommandEnd): void => {
      if (end) return;
      end = result;
      onPid();
      resolve(result);
    };
    const reader = new FrameReader((type, payload) => {
      if (type === Frame.Pid) {
        pid = Number(payload.toString());
        onPid();
      } else if (type === Frame.Stdout) sink?.("stdout", payload);
      else if (type === Frame.Stderr) sink?.("stderr", payload);
      else if (type === Frame.Exit) finish({ exitCode: Number(payload.toString()) });
      else if (type === Frame.Failure) finish({ failure: payload.toString() });
    });
    socket.on("data", (chunk: Buffer) => reader.push(chunk));
    socket.on("error", (error) => finish({ failure: `the spawner: ${error.message}` }));
    socket.on("close", () => {
      closed = true;
      finish({ failure: "the spawner's relay ended before the command" });
    });
  });
  const input = options.stdin;
  if (input instanceof Readable) {
    input.on("error", () => socket.end());
    input.pipe(socket);
  } else if (input !== undefined) {
    socket.end(input);
  } else {
    socket.end();
  }
  const ended = (): boolean => end !== null || closed;
  let killing: Promise<void> | null = null;
  const kill = (): Promise<void> => {
    if (!killing) {
      killing = pidKnown.then(async () => {
        if (!ended() && pid > 0) await options.killTree(pid, ended);
        await done;
        socket.destroy();
      });
    }
    return killing;
  };
  void done.then(() => socket.end());
  return { done, kill };
}
