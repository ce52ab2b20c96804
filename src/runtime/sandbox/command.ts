/**
 * One command run to its end, whatever runs it (a host process, nsenter into a local sandbox,
 * `podman exec`, an exec over the Kubernetes API): output captured with a byte cap (the tail is
 * kept) and passed on chunk by chunk, a timeout that kills the command's whole tree, an idempotent
 * kill(), and the one ExecResult.
 */
import { OutputCapture } from "./host/output-buffer.js";
import { DEFAULT_MAX_OUTPUT_BYTES } from "./layout.js";
import type { ExecOptions, ExecResult } from "./provider.js";

/** How a started command ended: its exit status (128+n for signal n), or a failure of the machinery. */
export type CommandEnd = { exitCode: number } | { failure: string };

export type OutputSink = (stream: "stdout" | "stderr", chunk: Buffer) => void;

/** A command as one runner started it. */
export interface RunningCommand {
  /** Settles when the command has ended; never rejects. */
  readonly done: Promise<CommandEnd>;
  /** Kills the command's whole process tree; resolves once it is gone. */
  kill(): Promise<void>;
  /** The place it ran in is gone: stop waiting for it (close the client or the socket). */
  release(): void;
}

export interface CommandRun {
  end: CommandEnd;
  /** The runner killed it (timeout or kill()). */
  killed: boolean;
  timedOut: boolean;
  output: OutputCapture;
  durationMs: number;
}

export interface SupervisedCommand {
  readonly done: Promise<CommandRun>;
  kill(): Promise<void>;
  release(): void;
}

export type SuperviseOptions = Pick<ExecOptions, "timeoutMs" | "maxOutputBytes" | "onOutput">;

export function superviseCommand(start: (sink: OutputSink) => RunningCommand, options: SuperviseOptions): SupervisedCommand {
  const started = Date.now();
  const output = new OutputCapture(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, options.onOutput);
  const command = start((stream, chunk) => output.push(stream, chunk));
  let ended = false;
  let killed = false;
  let timedOut = false;
  let killing: Promise<void> | null = null;
  const kill = (): Promise<void> => {
    if (!killing) {
      killed = !ended;
      killing = ended ? Promise.resolve() : command.kill();
    }
    return killing;
  };
  const timer =
    options.timeoutMs !== undefined && options.timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          void kill();
        }, options.timeoutMs)
      : undefined;
  const done = command.done.then((end) => {
    ended = true;
    clearTimeout(timer);
    return { end, killed, timedOut, output, durationMs: Date.now() - started };
  });
  return { done, kill, release: () => command.release() };
}

/** The ExecResult of a finished command: exit code null and signal SIGKILL when the runner killed it. */
export function execResultOf(run: CommandRun): ExecResult {
  const base = { ...run.output.fields(), timedOut: run.timedOut, durationMs: run.durationMs };
  if (run.killed) return { ...base, exitCode: null, signal: "SIGKILL" };
  if ("failure" in run.end) return { ...base, exitCode: null, signal: null, spawnError: run.end.failure };
  return { ...base, exitCode: run.end.exitCode, signal: null };
}
