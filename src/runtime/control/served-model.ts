/**
 * The policy server a command starts itself: a Model whose vllm engine has `serve` gets a vLLM
 * server for the command's lifetime (engines/vllm-server.ts). Its model directory gets the
 * project's initial policy first when it holds no model at all (no config.json), made by the
 * trainer package's init_model with the plan's seed, exactly as `reins run` makes it.
 */
import { existsSync, writeFileSync } from "node:fs";
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
  opts.log?.(`starting vLLM for ${model.engine.model} (${serve.modelPath}); its log: ${join(runDir, "vllm-server.log")}`);
  const server = await startVllmServer({ serve, model: model.engine.model, logFile: join(runDir, "vllm-server.log"), ...(opts.signal ? { signal: opts.signal } : {}) });
  opts.log?.(`vLLM answers at ${server.baseUrl} (started in ${server.startSeconds.toFixed(0)} s)`);
  const about = { pid: server.pid, baseUrl: server.baseUrl, startSeconds: server.startSeconds, command: server.command };
  writeFileSync(join(runDir, "vllm-server.json"), `${JSON.stringify(about, null, 1)}\n`);
  let stopped: Promise<void> | undefined;
  return {
    model: { ...model, engine: { ...model.engine, baseUrl: server.baseUrl } },
    server,
    stop: () => (stopped ??= server.stop()),
  };
}
