/**
 * One command in a pod over the API's exec websocket (client-node's Exec): stdin, output to a
 * sink, the exit status from channel 3. Stdin end-of-file needs the v5 channel protocol
 * (Kubernetes ≥ 1.30); without it the client closes the socket when stdin ends. The command is
 * killed by the caller (another exec); close() only drops the socket.
 */
import { Readable, Writable } from "node:stream";
import { Exec, type KubeConfig, type V1Status } from "@kubernetes/client-node";
import { WebSocketHandler } from "@kubernetes/client-node/dist/web-socket-handler.js";
import type { CommandEnd, OutputSink } from "../command.js";
import { outcomeOfStatus } from "./exec-status.js";

export interface PodTarget {
  config: KubeConfig;
  namespace: string;
  pod: string;
  container: string;
}

export interface PodExec {
  /** The exit code from the status channel, or why there is none (connection lost, pod gone). */
  readonly done: Promise<CommandEnd>;
  /** Closes the socket. */
  close(): void;
  /** True once the command's status (or the socket's close) arrived. */
  readonly finished: boolean;
}

function streamTo(sink: OutputSink | undefined, name: "stdout" | "stderr"): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      sink?.(name, chunk);
      callback();
    },
  });
}

export function startPodExec(target: PodTarget, command: string[], stdinData?: string | Uint8Array | Readable, sink?: OutputSink): PodExec {
  const stdout = streamTo(sink, "stdout");
  const stderr = streamTo(sink, "stderr");
  const stdin = stdinData === undefined ? null : stdinData instanceof Readable ? stdinData : Readable.from([Buffer.from(stdinData)]);
  // Our own streams, so that a close frame from the server never ends the runner's stdio.
  const handler = new WebSocketHandler(target.config, undefined, { stdin: stdin ?? Readable.from([]), stdout, stderr });
  const exec = new Exec(target.config, handler);
  let status: V1Status | null = null;
  let finished = false;
  let socket: { close(): void } | null = null;
  let closeRequested = false;

  const done = new Promise<CommandEnd>((resolve) => {
    const finish = (connectError?: Error): void => {
      if (finished) return;
      finished = true;
      const outcome = status ? outcomeOfStatus(status) : null;
      if (outcome && "exitCode" in outcome) resolve(outcome);
      else resolve({ failure: `exec failed: ${connectError?.message ?? outcome?.error ?? "the exec stream closed without a status"}` });
    };
    exec
      .exec(target.namespace, target.pod, target.container, command, stdout, stderr, stdin, false, (s) => {
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
    get finished() {
      return finished;
    },
  };
}
