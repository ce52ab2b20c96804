/**
 * One host process that stands for a command in a sandbox (nsenter for local, `podman exec` for
 * podman): output capture with a byte cap, stdin, a timeout, and a provider-specific tree kill.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { OutputBuffer } from "./output-buffer.js";
import { DEFAULT_MAX_OUTPUT_BYTES, type ExecOptions, type ExecResult } from "./provider.js";

export interface HostRun {
  /** Exit code of the host process, or null when it died of a signal. */
  code: number | null;
  /** Signal that ended the host process, if any. */
  hostSignal: NodeJS.Signals | null;
  stdout: OutputBuffer;
  stderr: OutputBuffer;
  /** The runner killed it (timeout or kill()). */
  killed: boolean;
  timedOut: boolean;
  /** spawn() itself failed (e.g. the binary is missing). */
  spawnError?: Error;
  durationMs: number;
}

export interface HostProcessOptions extends ExecOptions {
  /** The exact environment of the host process. */
  hostEnv: Record<string, string>;
  /** Kills the whole tree standing behind the host process; resolves once it is gone. */
  killTree: (child: ChildProcess) => Promise<void>;
  /** Start in a new session, without the runner's controlling terminal (no /dev/tty, no TIOCSTI, no Ctrl-C). */
  newSession?: boolean;
}

export interface HostProcess {
  readonly child: ChildProcess;
  readonly done: Promise<HostRun>;
  kill(): Promise<void>;
}

export function startHostProcess(command: string, args: string[], options: HostProcessOptions): HostProcess {
  const started = Date.now();
  const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const stdout = new OutputBuffer(max);
  const stderr = new OutputBuffer(max);
  const child = spawn(command, args, {
    env: options.hostEnv,
    detached: options.newSession === true,
    stdio: [options.stdin !== undefined ? "pipe" : "ignore", "pipe", "pipe"],
  });
  let killed = false;
  let timedOut = false;
  let spawnError: Error | undefined;
  let killing: Promise<void> | null = null;

  child.stdout?.on("data", (chunk: Buffer) => {
    stdout.push(chunk);
    options.onOutput?.("stdout", chunk);
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr.push(chunk);
    options.onOutput?.("stderr", chunk);
  });
  if (child.stdin) {
    child.stdin.on("error", () => undefined);
    child.stdin.end(options.stdin);
  }

  const kill = (): Promise<void> => {
    if (!killing) {
      killed = true;
      killing = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : options.killTree(child);
    }
    return killing;
  };

  let timer: NodeJS.Timeout | undefined;
  if (options.timeoutMs !== undefined && options.timeoutMs > 0) {
    timer = setTimeout(() => {
      timedOut = true;
      void kill();
    }, options.timeoutMs);
  }

  const done = new Promise<HostRun>((resolve) => {
    let settled = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve({
        code,
        hostSignal: signal,
        stdout,
        stderr,
        killed,
        timedOut,
        spawnError,
        durationMs: Date.now() - started,
      });
    };
    child.on("error", (error) => {
      spawnError = error;
      finish(null, null);
    });
    child.on("close", (code, signal) => finish(code, signal));
  });

  return { child, done, kill };
}

/** The ExecResult of a finished host run: `exitCode` null and signal SIGKILL when the runner killed it. */
export function execResultOf(run: HostRun, killedByRunner: boolean, exitCode: number | null): ExecResult {
  return {
    exitCode: killedByRunner ? null : exitCode,
    signal: killedByRunner ? "SIGKILL" : null,
    stdout: run.stdout.text(),
    stderr: run.stderr.text(),
    stdoutTruncated: run.stdout.truncated,
    stderrTruncated: run.stderr.truncated,
    timedOut: run.timedOut,
    durationMs: run.durationMs,
  };
}
