/**
 * `reins …` as a child process: the one way tests launch the CLI (bin/reins.js of this repository).
 *
 * - `reins(args, opts)` runs it to the end and blocks this process;
 * - `reinsAsync(args, opts)` runs it to the end without blocking (fake servers in the test answer from this process);
 * - `spawnReins(args, opts)` hands back the live child, for tests that kill it, resume it or read its output as it comes.
 *
 * The child inherits this process's environment (none with `opts.bareEnv`) with `opts.env` laid over it (a variable
 * given as `undefined` is removed) and always NO_COLOR=1; it runs in `opts.cwd`, by default this process's working directory.
 */
import { spawn, spawnSync, type ChildProcess, type ChildProcessWithoutNullStreams, type StdioOptions } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Absolute path of the CLI entry point. */
export const REINS_BIN = fileURLToPath(new URL("../bin/reins.js", import.meta.url));

export interface ReinsOptions {
  cwd?: string;
  /** Laid over process.env; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** Start from an empty environment instead of process.env: the child sees only `env` (and NO_COLOR). */
  bareEnv?: boolean;
}

export interface ReinsRunOptions extends ReinsOptions {
  /** Written to the child's stdin. */
  input?: string;
  /** Milliseconds before the child is sent SIGTERM; none by default. */
  timeout?: number;
}

export interface ReinsAsyncOptions extends ReinsRunOptions {
  /** Called with all of stderr so far each time more arrives, and the child (to kill it at a given line). */
  onStderr?: (stderr: string, child: ChildProcess) => void;
}

export interface ReinsSpawnOptions extends ReinsOptions {
  /** As for child_process.spawn; pipes by default. */
  stdio?: StdioOptions;
}

export interface ReinsResult {
  /** Exit status; null when a signal ended the child. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Large enough that no test's output gets the child killed for it. */
const MAX_BUFFER = 64 * 1024 * 1024;

function childEnv({ env = {}, bareEnv = false }: ReinsOptions): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = bareEnv ? {} : { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  out.NO_COLOR = "1";
  return out;
}

/** Runs the CLI to the end, blocking this process. */
export function reins(args: readonly string[], opts: ReinsRunOptions = {}): ReinsResult {
  const r = spawnSync(process.execPath, [REINS_BIN, ...args], {
    cwd: opts.cwd,
    env: childEnv(opts),
    input: opts.input,
    timeout: opts.timeout,
    encoding: "utf8",
    maxBuffer: MAX_BUFFER,
  });
  if (r.error && r.status === null && r.signal === null) throw r.error;
  return { code: r.status, signal: r.signal, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

/** The live child: for killing it part-way, resuming after, or reading its output as it comes. */
export function spawnReins(args: readonly string[], opts?: ReinsOptions): ChildProcessWithoutNullStreams;
export function spawnReins(args: readonly string[], opts: ReinsSpawnOptions): ChildProcess;
export function spawnReins(args: readonly string[], opts: ReinsSpawnOptions = {}): ChildProcess {
  return spawn(process.execPath, [REINS_BIN, ...args], { cwd: opts.cwd, env: childEnv(opts), stdio: opts.stdio ?? "pipe" });
}

/** Runs the CLI to the end without blocking this process. */
export function reinsAsync(args: readonly string[], opts: ReinsAsyncOptions = {}): Promise<ReinsResult> {
  return new Promise((done, fail) => {
    const child = spawnReins(args, { cwd: opts.cwd, env: opts.env, bareEnv: opts.bareEnv });
    let stdout = "";
    let stderr = "";
    let timer: NodeJS.Timeout | undefined;
    if (opts.timeout !== undefined) timer = setTimeout(() => child.kill("SIGTERM"), opts.timeout);
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => {
      stderr += d;
      opts.onStderr?.(stderr, child);
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    child.on("error", (e) => {
      clearTimeout(timer);
      fail(e);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr });
    });
  });
}
