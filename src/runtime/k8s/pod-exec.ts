/**
 * One command in a pod over the API's exec websocket (client-node's Exec): stdin, capped output,
 * the exit status from channel 3, and a timeout. Stdin end-of-file needs the v5 channel protocol
 * (Kubernetes ≥ 1.30); without it the client closes the socket when stdin ends.
 */
import { Readable, Writable } from "node:stream";
import { Exec, type KubeConfig, type V1Status } from "@kubernetes/client-node";
import { WebSocketHandler } from "@kubernetes/client-node/dist/web-socket-handler.js";
import { OutputBuffer } from "../sandbox/output-buffer.js";
import { DEFAULT_MAX_OUTPUT_BYTES, type ExecOptions } from "../sandbox/provider.js";
import { outcomeOfStatus, type ExecOutcome } from "./exec-status.js";

export interface PodTarget {
  config: KubeConfig;
  namespace: string;
  pod: string;
  container: string;
}

export interface PodExecRun {
  /** null when the socket closed without a status (connection lost, pod gone). */
  outcome: ExecOutcome | null;
  stdout: OutputBuffer;
  stderr: OutputBuffer;
  killed: boolean;
  timedOut: boolean;
  connectError?: Error;
  durationMs: number;
}

export interface PodExec {
  readonly done: Promise<PodExecRun>;
  /** Closes the socket (the command is killed separately by the caller). */
  close(): void;
  /** Marks the run as killed by the runner. */
  markKilled(timedOut: boolean): void;
  /** True once the command's status (or the socket's close) arrived. */
  readonly finished: boolean;
}

function sink(buffer: OutputBuffer, name: "stdout" | "stderr", onOutput: ExecOptions["onOutput"]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      buffer.push(chunk);
      onOutput?.(name, chunk);
      callback();
    },
  });
}

export function startPodExec(target: PodTarget, command: string[], options: ExecOptions = {}): PodExec {
  const started = Date.now();
  const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const stdout = new OutputBuffer(max);
  const stderr = new OutputBuffer(max);
  const stdoutSink = sink(stdout, "stdout", options.onOutput);
  const stderrSink = sink(stderr, "stderr", options.onOutput);
  const stdin = options.stdin !== undefined ? Readable.from([Buffer.from(options.stdin)]) : null;
  // Our own streams, so that a close frame from the server never ends the runner's stdio.
  const handler = new WebSocketHandler(target.config, undefined, {
    stdin: stdin ?? Readable.from([]),
    stdout: stdoutSink,
    stderr: stderrSink,
  });
  const exec = new Exec(target.config, handler);
  let status: V1Status | null = null;
  let killed = false;
  let timedOut = false;
  let finished = false;
  let socket: { close(): void } | null = null;
  let closeRequested = false;

  const done = new Promise<PodExecRun>((resolve) => {
    const finish = (connectError?: Error): void => {
      if (finished) return;
      finished = true;
      resolve({
        outcome: status ? outcomeOfStatus(status) : null,
        stdout,
        stderr,
        killed,
        timedOut,
        connectError,
        durationMs: Date.now() - started,
      });
    };
    exec
      .exec(target.namespace, target.pod, target.container, command, stdoutSink, stderrSink, stdin, false, (s) => {
        status = s;
      })
      .then((ws) => {
        socket = ws;
        ws.on("close", () => finish());
        ws.on("error", () => finish());
        if (closeRequested) ws.close();
      })
      .catch((error: unknown) => finish(error instanceof Error ? error : new Error(String(error))));
  });

  return {
    done,
    close: () => {
      closeRequested = true;
      socket?.close();
    },
    markKilled: (t: boolean) => {
      killed = true;
      timedOut = timedOut || t;
    },
    get finished() {
      return finished;
    },
  };
}
