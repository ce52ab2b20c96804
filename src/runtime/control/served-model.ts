/**
 * The policy server a command starts itself: a Model whose vllm engine has `serve` gets a vLLM
 * server for the command's lifetime (engines/vllm-server.ts). Its model directory gets the
 * project's initial policy first when it holds no model at all (no config.json), made by the
 * trainer package's init_model with the plan's seed, exactly as `reins run` makes it.
 * A server of an earlier process on the same run directory that is still alive (reins was
 * killed with SIGKILL, which leaves no chance to stop it) is stopped before the new one starts,
 * so a resumed run neither keeps nor talks to a stale server.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Plan, ResolvedModel } from "../../compiler/index.js";
import { startVllmServer, type VllmServer } from "../engines/vllm-server.js";
import { ensureInitialPolicy } from "./policy.js";

export interface ServedModel {
  /** The plan's model with the started server's baseUrl (the plan's own model when nothing is served). */
  model: ResolvedModel | undefined;
  server?: VllmServer;
  /** Stops the server (a no-op when none was started); safe to call twice. */
  stop(): Promise<void>;
}

/** The model directory a served engine loads, when the plan's model has one. */
export function servedModelDir(model: ResolvedModel | undefined): string | undefined {
  return model?.engine.type === "vllm" ? model.engine.serve?.modelPath : undefined;
}

/**
 * Start the plan's served engine, if its model has one: create the initial policy where the
 * directory has no model, start the server (its log: `<runDir>/vllm-server.log`), and return
 * the model that points at it.
 */
export async function startServedModel(plan: Plan, runDir: string, opts: { signal?: AbortSignal; log?: (line: string) => void } = {}): Promise<ServedModel> {
  const model = plan.model;
  if (model?.engine.type !== "vllm" || !model.engine.serve) return { model, stop: async () => undefined };
  const serve = model.engine.serve;
  if (!existsSync(join(serve.modelPath, "config.json"))) {
    const init = await ensureInitialPolicy(serve.modelPath, { seed: plan.seed, python: plan.trainer?.python ?? "/usr/bin/python3" });
    if (init.created) opts.log?.(`created the initial policy in ${serve.modelPath} (weights ${init.version})`);
  }
  const stale = await stopStaleServer(runDir);
  if (stale) opts.log?.(`stopped the vLLM server (pid ${stale}) an earlier reins left running for this run directory`);
  opts.log?.(`starting vLLM for ${model.engine.model} (${serve.modelPath}); its log: ${join(runDir, "vllm-server.log")}`);
  // Recorded as soon as it is spawned: a reins killed while the server starts leaves its pid behind.
  const record = (about: { pid: number; command: string[]; baseUrl?: string; startSeconds?: number }) =>
    writeFileSync(join(runDir, "vllm-server.json"), `${JSON.stringify(about, null, 1)}\n`);
  const server = await startVllmServer({
    serve,
    model: model.engine.model,
    logFile: join(runDir, "vllm-server.log"),
    onSpawn: (pid, command) => record({ pid, command }),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  record({ pid: server.pid, baseUrl: server.baseUrl, startSeconds: server.startSeconds, command: server.command });
  opts.log?.(`vLLM answers at ${server.baseUrl} (started in ${server.startSeconds.toFixed(0)} s)`);
  let stopped: Promise<void> | undefined;
  return {
    model: { ...model, engine: { ...model.engine, baseUrl: server.baseUrl } },
    server,
    stop: () => (stopped ??= server.stop()),
  };
}

/**
 * Stop the server recorded in `<runDir>/vllm-server.json` when it is still running (its pid is a
 * vLLM api_server, not a reused pid): SIGTERM to its process group, SIGKILL after 15 s. Returns
 * its pid, or undefined when there was none.
 */
export async function stopStaleServer(runDir: string): Promise<number | undefined> {
  let pid: number;
  try {
    pid = (JSON.parse(readFileSync(join(runDir, "vllm-server.json"), "utf8")) as { pid: number }).pid;
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 1 || !isVllmServer(pid)) return undefined;
  const signalGroup = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
      return true;
    } catch {
      return false;
    }
  };
  signalGroup("SIGTERM");
  const deadline = Date.now() + 15_000;
  while (isVllmServer(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  // What is left of the group (the engine core), until none of it is.
  while (signalGroup("SIGKILL") && Date.now() < deadline + 15_000) await new Promise((r) => setTimeout(r, 100));
  return pid;
}

function isVllmServer(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) return false;
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("vllm.entrypoints.openai.api_server");
  } catch {
    return false;
  }
}
