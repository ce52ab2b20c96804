/**
 * A vLLM server reins starts itself (a Model's `engine.serve`) for one command's lifetime:
 * `buildServeCommand` is the pure command line and environment; `startVllmServer` spawns it in its
 * own process group on a free loopback port, its output appended to a log file, waits until
 * `/v1/models` answers, and returns a handle whose `stop` ends the whole group (vLLM runs its
 * engine core in a child process). A server that exits or never answers is an EngineServerFailed
 * with the log's tail. The group is killed also when node exits without stopping it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { CODES } from "../../compiler/contract/codes.js";
import type { ResolvedVllmServe } from "../../compiler/contract/plan.js";
import { ReinsError } from "../../compiler/contract/problem.js";

export interface ServeCommand {
  command: string;
  args: string[];
  /** Added to the parent's environment. */
  env: Record<string, string>;
}

/** The scale venv's python (scripts/install-python.sh --print), where serve.python is not given. */
export function defaultServePython(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.REINS_SCALE_PYTHON_DIR || join(homedir(), ".cache", "reins", "scale-python"), "bin", "python");
}

/** The api_server command line for `serve`, serving `model` on 127.0.0.1:`port`. Pure. */
export function buildServeCommand(serve: ResolvedVllmServe, model: string, port: number, env: NodeJS.ProcessEnv = process.env): ServeCommand {
  return {
    command: serve.python ?? defaultServePython(env),
    args: [
      "-m",
      "vllm.entrypoints.openai.api_server",
      "--model",
      serve.modelPath,
      "--served-model-name",
      model,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--enforce-eager",
      "--max-model-len",
      String(serve.maxModelLen),
      "--dtype",
      serve.dtype,
      // reins sends token ids and reads ids: the server needs no tokenizer files.
      "--skip-tokenizer-init",
      ...serve.args,
    ],
    env: {
      VLLM_CPU_KVCACHE_SPACE: env.VLLM_CPU_KVCACHE_SPACE ?? "1",
      VLLM_CPU_OMP_THREADS_BIND: env.VLLM_CPU_OMP_THREADS_BIND ?? "nobind",
      VLLM_SERVER_DEV_MODE: "1",
      VLLM_NO_USAGE_STATS: "1",
      DO_NOT_TRACK: "1",
      PYTHONUNBUFFERED: "1",
    },
  };
}

export interface VllmServer {
  baseUrl: string;
  pid: number;
  /** Seconds from spawn until /v1/models answered. */
  startSeconds: number;
  logFile: string;
  /** The command line it runs (python and its arguments). */
  command: string[];
  /** SIGTERM to the process group, SIGKILL after `graceMs`; resolves once the server has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  serve: ResolvedVllmServe;
  model: string;
  /** Where the server's stdout and stderr go (appended). */
  logFile: string;
  /** Aborting stops the wait (and the server). */
  signal?: AbortSignal;
  /** Called once the process is spawned, before it answers (to record its pid at once). */
  onSpawn?: (pid: number, command: string[]) => void;
}

/** Start the server and wait until it answers /v1/models. */
export async function startVllmServer(o: StartOptions): Promise<VllmServer> {
  const port = await findFreePort();
  const cmd = buildServeCommand(o.serve, o.model, port);
  const fd = openSync(o.logFile, "a");
  let child: ChildProcess;
  try {
    child = spawn(cmd.command, cmd.args, { env: { ...process.env, ...cmd.env }, stdio: ["ignore", fd, fd], detached: true });
  } finally {
    closeSync(fd);
  }
  const started = Date.now();
  if (child.pid !== undefined) o.onSpawn?.(child.pid, [cmd.command, ...cmd.args]);
  const exited = new Promise<string>((resolve) => {
    child.once("error", (err) => resolve(err.message));
    child.once("exit", (code, sig) => resolve(sig ? `killed by ${sig}` : `exit code ${code}`));
  });
  let done = false;
  void exited.then(() => (done = true));
  const killGroup = (sig: NodeJS.Signals) => {
    if (done || child.pid === undefined) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      /* already gone */
    }
  };
  const onExit = () => killGroup("SIGKILL");
  process.once("exit", onExit);
  const stop = async (graceMs = 30_000) => {
    process.removeListener("exit", onExit);
    killGroup("SIGTERM");
    const timer = setTimeout(() => killGroup("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
    // The engine core may outlive the api server for a moment: end what is left of the group,
    // and return only once none of it is left (not even a zombie waiting to be reaped).
    if (child.pid !== undefined) await endGroup(child.pid, 15_000);
  };
  const baseUrl = `http://127.0.0.1:${port}`;
  const fail = async (why: string): Promise<never> => {
    await stop(5_000);
    throw new ReinsError(
      "EngineServerFailed",
      `The vLLM server reins started (${cmd.command} -m vllm.entrypoints.openai.api_server --model ${o.serve.modelPath}) ${why}. The end of its log ${o.logFile}:\n${readTail(o.logFile, 30)}`,
      CODES.EngineServerFailed,
    );
  };
  const deadline = started + o.serve.startTimeoutSeconds * 1000;
  for (;;) {
    if (done) return fail(`exited before it answered (${await exited})`);
    if (o.signal?.aborted) return fail("was stopped before it answered: interrupted");
    if (Date.now() > deadline) return fail(`did not answer ${baseUrl}/v1/models within ${o.serve.startTimeoutSeconds} s`);
    if (await answers(`${baseUrl}/v1/models`)) break;
    await Promise.race([exited, new Promise((r) => setTimeout(r, 1000))]);
  }
  return { baseUrl, pid: child.pid!, startSeconds: (Date.now() - started) / 1000, logFile: o.logFile, command: [cmd.command, ...cmd.args], stop };
}

/** SIGKILL what is left of process group `pgid`, then wait until it is empty (at most `waitMs`). */
async function endGroup(pgid: number, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      return; // ESRCH: no process of the group is left
    }
    if (Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    await res.body?.cancel().catch(() => undefined);
    return res.ok;
  } catch {
    return false;
  }
}

function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

function readTail(file: string, lines: number): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}
