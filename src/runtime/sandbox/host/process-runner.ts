/**
 * The one runner of host processes: the nsenter that stands for a local sandbox's command,
 * `podman exec` and the podman CLI, and a verifier's commands on a host directory.
 *
 * By default the whole tree behind a process is the runner's to kill: it starts in a process group
 * of its own with a per-run marker in its environment, and kill() freezes and kills its group,
 * every descendant and every process still carrying the marker (setsid'd daemons included). What
 * it leaves behind when it exits is killed too, and its pipes are given a short grace to close.
 * A provider whose tree lies elsewhere (a pid namespace, a container) passes its own `killTree`.
 */
import { Readable } from "node:stream";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import os from "node:os";
import { execResultOf, superviseCommand, type CommandEnd, type OutputSink, type SuperviseOptions } from "../command.js";
import type { ExecResult } from "../provider.js";
import { killHostTree, MARKER_VAR } from "./process-tree.js";

/** After a marked process exits, how long stray holders of its pipes may keep them open. */
const CLOSE_GRACE_MS = 1000;

export interface HostProcessOptions {
  /** The exact environment of the process. */
  env: Record<string, string>;
  cwd?: string;
  /** Written and closed at once, or piped in as it comes (a stream). */
  stdin?: string | Uint8Array | Readable;
  /** Start in a new session, without the runner's controlling terminal (no /dev/tty, no TIOCSTI, no Ctrl-C). Default true. */
  newSession?: boolean;
  /** Kills the tree standing behind the process; resolves once it is gone. Default: the marked tree. */
  killTree?: (child: ChildProcess) => Promise<void>;
}

export interface HostProcess {
  readonly child: ChildProcess;
  /** Settles when the process has ended and its output is read; never rejects. */
  readonly done: Promise<CommandEnd>;
  kill(): Promise<void>;
}

function signalNumber(signal: NodeJS.Signals): number {
  return (os.constants.signals as Record<string, number>)[signal] ?? 9;
}

export function startHostProcess(argv: string[], options: HostProcessOptions, sink?: OutputSink): HostProcess {
  const marker = options.killTree ? undefined : randomBytes(8).toString("hex");
  const child = spawn(argv[0], argv.slice(1), {
    env: marker ? { ...options.env, [MARKER_VAR]: marker } : options.env,
    cwd: options.cwd,
    detached: options.newSession !== false || marker !== undefined,
    stdio: [options.stdin !== undefined ? "pipe" : "ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (chunk: Buffer) => sink?.("stdout", chunk));
  child.stderr?.on("data", (chunk: Buffer) => sink?.("stderr", chunk));
  if (child.stdin) {
    child.stdin.on("error", () => undefined);
    const input = options.stdin;
    if (input instanceof Readable) input.pipe(child.stdin);
    else child.stdin.end(input);
  }
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
  const killTree = options.killTree ?? (async (c: ChildProcess) => void (c.pid !== undefined && killHostTree(c.pid, marker)));
  let killing: Promise<void> | null = null;
  const kill = (): Promise<void> => {
    if (!killing) killing = exited() ? Promise.resolve() : killTree(child);
    return killing;
  };

  const done = new Promise<CommandEnd>((resolve) => {
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    const finish = (end: CommandEnd): void => {
      if (settled) return;
      settled = true;
      clearTimeout(grace);
      resolve(end);
    };
    const endOf = (code: number | null, signal: NodeJS.Signals | null): CommandEnd => ({ exitCode: code ?? 128 + signalNumber(signal ?? "SIGKILL") });
    child.on("error", (error) => finish({ failure: error.message }));
    child.on("close", (code, signal) => finish(endOf(code, signal)));
    if (marker) {
      child.on("exit", (code, signal) => {
        // Whatever the process left behind dies with it; stray pipe holders get a short grace.
        if (child.pid !== undefined) killHostTree(child.pid, marker, false);
        grace = setTimeout(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
          finish(endOf(code, signal));
        }, CLOSE_GRACE_MS);
      });
    }
  });
  return { child, done, kill };
}

export interface HostCommandOptions extends HostProcessOptions, SuperviseOptions {}

/** Runs a host command to its end: never throws for a bad command (see `spawnError`). */
export function runHostCommand(argv: string[], options: HostCommandOptions): Promise<ExecResult> {
  if (argv.length === 0) {
    return Promise.resolve({
      exitCode: null,
      signal: null,
      stdout: "",
      stderr: "",
      stdoutTruncated: false,
      stderrTruncated: false,
      timedOut: false,
      durationMs: 0,
      spawnError: "empty command",
    });
  }
  const run = superviseCommand((sink) => {
    const p = startHostProcess(argv, options, sink);
    return { done: p.done, kill: p.kill, release: () => void p.kill() };
  }, options);
  return run.done.then(execResultOf);
}
