/**
 * Engines by `type`. Each engine file exports one factory; the registry loads it on demand so a
 * proxy that uses the scripted engine never loads onnxruntime.
 */
import type { ResolvedEngine } from "../../compiler/contract/plan.js";
import type { Engine, EngineContext, EngineFactory } from "./engine.js";

export type { EngineContext, EngineFactory } from "./engine.js";

/** Engines by token ids; a hosted model is asked in text (./hosted-api.ts) and is no Engine. */
type TokenEngine = Exclude<ResolvedEngine, { type: "hosted" }>;
type Loaders = { [T in TokenEngine["type"]]: () => Promise<EngineFactory<Extract<TokenEngine, { type: T }>>> };

const loaders: Loaders = {
  scripted: async () => (await import("./scripted.js")).createScriptedEngine,
  "openai-compatible": async () => (await import("./openai-compatible.js")).createOpenAICompatibleEngine,
  vllm: async () => (await import("./vllm.js")).createVllmEngine,
  sglang: async () => (await import("./sglang.js")).createSglangEngine,
  "llama-cpp": async () => (await import("./llama-cpp.js")).createLlamaCppEngine,
  onnx: async () => {
    const { createOnnxEngine } = await import("./onnx.js");
    return async (spec) => createOnnxEngine(spec);
  },
};

/** Build the engine a model's spec names. */
export async function createEngine(spec: ResolvedEngine, ctx: EngineContext): Promise<Engine> {
  if (spec.type === "hosted") throw new Error(`a hosted model (${spec.api} ${spec.model}) is no token engine: route it to the hosted API client`);
  const load = loaders[spec.type] as () => Promise<EngineFactory>;
  if (!load) throw new Error(`no engine registered for type ${JSON.stringify((spec as { type: string }).type)}`);
  const factory = await load();
  return factory(spec, ctx);
}

export const ENGINE_TYPES = Object.keys(loaders) as TokenEngine["type"][];
