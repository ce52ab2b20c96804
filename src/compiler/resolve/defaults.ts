/**
 * Spec → Resolved* with defaults applied and units normalized. Host paths (mounts, tokenizer and
 * onnx files) are made absolute here, once, against the directory of the spec file that names
 * them; nothing at run time resolves them again. Those reins reads or mounts are checked to lie in
 * the spec's project (host-paths.ts).
 */
import { dirname, resolve } from "node:path";
import {
  DEFAULT_BAD_STEP_POLICY,
  type BadStepPolicy,
  type MetricsSinks,
  type ResolvedAlgorithm,
  type ResolvedHarness,
  type ResolvedModel,
  type ResolvedSandbox,
  type ResolvedTrainer,
  type ScriptedTurn,
} from "../contract/plan.js";
import { CALL_CLASSES } from "../contract/vocabulary.js";
import { makeDiagnostic, type Diagnostic } from "../contract/diagnostics.js";
import type { SourcePosition } from "../contract/problem.js";
import type { AlgorithmSpec } from "../schema/algorithm.js";
import type { HarnessSpec } from "../schema/harness.js";
import type { ModelSpec } from "../schema/model.js";
import type { SandboxSpec, TrainerSpec } from "../schema/sandbox.js";
import type { ExperimentSpec } from "../schema/experiment.js";
import { chatTemplateWorkProblem } from "./chat-template-render.js";
import { checkModelFile, modelFileRoots, MODEL_FILE_OUTSIDE_HINT, MODEL_FILE_TOO_LARGE_HINT } from "../source/model-files.js";
import { ownDirectoryRoots, type ProjectRoot, type Refusal } from "../source/project.js";
import { readHfDirectory } from "./hf-directory.js";
import { resolveHostedApi } from "./hosted.js";
import { readChatTemplate, type HostPathProblem } from "./host-paths.js";

export function toNumber(v: number | string | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  return typeof v === "number" ? v : Number(v);
}

/** `specFile`: the absolute path of the Harness's file; mount paths are relative to it. */
export function resolveHarness(name: string, spec: HarnessSpec, specFile: string): ResolvedHarness {
  const base = dirname(specFile);
  const out: ResolvedHarness = {
    name,
    command: [...spec.command],
    env: { ...(spec.env ?? {}) },
    homeFiles: (spec.homeFiles ?? []).map((f) => ({ ...f })),
    optOuts: { ...(spec.optOuts ?? {}) },
    model: spec.model ?? "policy",
    callClasses: (spec.callClasses ?? []).map((r) => ({ class: r.class, match: { ...r.match } })),
    startupSeconds: spec.startupSeconds ?? (spec.dialect ? 2 : 0),
    mounts: (spec.mounts ?? []).map((m) => ({ hostPath: resolve(base, m.path), sandboxPath: m.sandboxPath })),
  };
  if (spec.dialect) out.dialect = spec.dialect;
  if (spec.install) out.install = { ...spec.install };
  if (spec.referenceTools) out.referenceTools = structuredClone(spec.referenceTools);
  if (spec.knobs && Object.keys(spec.knobs).length > 0) out.knobs = structuredClone(spec.knobs);
  if (spec.mcp)
    out.mcp = {
      args: [...(spec.mcp.args ?? [])],
      env: { ...(spec.mcp.env ?? {}) },
      homeFiles: (spec.mcp.homeFiles ?? []).map((f) => ({ ...f })),
      toolName: spec.mcp.toolName ?? "{{server}}__{{tool}}",
    };
  return out;
}

/** What a Model says about tokens, meaningless for a hosted engine (text in, text out). */
const TOKEN_FIELDS = ["tokenizer", "chatTemplate", "chatTemplateFile", "toolCallFormat", "reasoning", "stopTokens"] as const;

/**
 * `specFile`: the absolute path of the Model's file; tokenizer, chat template and onnx model paths
 * are relative to it and come out absolute (the plan hash sees them relative to Plan.root). The
 * files reins reads for the Model (tokenizer, chat template) must lie in `roots`, the file's
 * project (../source/model-files.ts), and its chat template must render a small conversation
 * within the work budget of ./chat-template-render.ts.
 */
export function resolveModel(
  name: string,
  spec: ModelSpec,
  specFile: string,
  roots?: readonly ProjectRoot[],
): { model: ResolvedModel; problems: HostPathProblem[] } {
  const problems: HostPathProblem[] = [];
  const base = dirname(specFile);
  const fileRoots = modelFileRoots(specFile, roots ?? ownDirectoryRoots(specFile));
  const abs = (p: string) => resolve(base, p);
  const t = spec.tokenizer;
  const hosted = spec.engine.type === "hosted";
  if (hosted) {
    const own = TOKEN_FIELDS.filter((f) => spec[f] !== undefined);
    for (const f of own) {
      problems.push({
        path: [f],
        code: "NotForHostedModel",
        message: `A hosted model takes text and answers text: its tokens, template and stop rules are the API's, so ${f} would do nothing.`,
      });
    }
  } else if (t === undefined) {
    problems.push({
      path: ["engine", "type"],
      code: "TokenizerRequired",
      message: `The Model's ${spec.engine.type} engine works by token ids, but the Model names no tokenizer.`,
    });
  }
  const tokenizer: ResolvedModel["tokenizer"] =
    t === undefined || hosted
      ? undefined
      : t.type === "file"
        ? { type: "file", path: abs(t.path) }
        : t.type === "huggingface"
          ? { type: "huggingface", path: abs(t.path), ...(t.template !== undefined ? { template: t.template } : {}) }
          : { type: "qwen3" };
  if (t?.type === "file" && !hosted) problems.push(...tokenizerFileProblems(t.path, base, fileRoots));
  let chatTemplate = spec.chatTemplate;
  if (spec.chatTemplateFile !== undefined) {
    const read = readChatTemplate(spec.chatTemplateFile, specFile, fileRoots);
    if (read.ok) chatTemplate = read.text;
    else problems.push(read.problem);
  }
  let stopTokens = spec.stopTokens;
  let chatTemplateVariables: Record<string, string> | undefined;
  if (t?.type === "huggingface" && !hosted) {
    const ownTemplate = spec.chatTemplate !== undefined || spec.chatTemplateFile !== undefined;
    if (ownTemplate && t.template !== undefined) {
      problems.push({
        path: ["tokenizer", "template"],
        code: "ChatTemplateConflict",
        message: `tokenizer.template picks one of ${t.path}'s chat templates, but the Model gives its own (${spec.chatTemplate !== undefined ? "chatTemplate" : "chatTemplateFile"}).`,
      });
    }
    const read = readHfDirectory(abs(t.path), t.path, t.template, !ownTemplate, fileRoots);
    if (!read.ok)
      problems.push({
        path: ["tokenizer", read.problem.field],
        code: read.problem.code,
        message: read.problem.message,
        ...(read.problem.hint ? { hint: read.problem.hint } : {}),
      });
    else {
      const dir = read.value;
      if (Object.keys(dir.variables).length > 0) chatTemplateVariables = dir.variables;
      if (!ownTemplate) {
        if (dir.chatTemplate !== undefined) chatTemplate = dir.chatTemplate;
        else
          problems.push({
            path: ["tokenizer", "path"],
            code: "ChatTemplateMissing",
            message: `${t.path} has no chat template (no chat_template.jinja, no chat_template in tokenizer_config.json).`,
          });
      }
      if (stopTokens === undefined) {
        if (dir.stopTokens.length > 0) stopTokens = dir.stopTokens;
        else
          problems.push({
            path: ["tokenizer", "path"],
            code: "StopTokensMissing",
            message: `${t.path} names no end-of-sequence token (no eos_token_id in generation_config.json, no eos_token in tokenizer_config.json).`,
          });
      }
    }
  }
  if (chatTemplate !== undefined && !hosted) {
    const tooMuch = chatTemplateWorkProblem(chatTemplate, chatTemplateVariables);
    if (tooMuch !== undefined) {
      const at =
        spec.chatTemplateFile !== undefined
          ? ["chatTemplateFile"]
          : spec.chatTemplate !== undefined
            ? ["chatTemplate"]
            : ["tokenizer", t?.type === "huggingface" && t.template !== undefined ? "template" : "path"];
      problems.push({
        path: at,
        code: "ChatTemplateTooMuchWork",
        message: `The chat template does not render a five-message conversation in time: ${tooMuch}.`,
      });
    }
  }
  const e = spec.engine;
  const engine: ResolvedModel["engine"] =
    e.type === "scripted"
      ? { type: "scripted", script: e.script.map((t) => ({ ...t }) as ScriptedTurn) }
      : e.type === "openai-compatible"
        ? {
            type: "openai-compatible",
            baseUrl: e.baseUrl,
            model: e.model,
            ...(e.apiKeyEnv ? { apiKeyEnv: e.apiKeyEnv } : {}),
            ...(e.api ? { api: e.api } : {}),
          }
        : e.type === "vllm"
          ? resolveVllm(e, abs, spec.maxContextTokens ?? 32768, problems)
          : e.type === "sglang" || e.type === "llama-cpp"
            ? { ...e }
            : e.type === "hosted"
              ? { type: "hosted", ...resolveHostedApi(e) }
              : {
                  type: "onnx",
                  modelPath: abs(e.modelPath),
                  threads: e.threads ?? 1,
                  parallel: e.parallel ?? 1,
                  seed: e.seed ?? 0,
                  ...(e.prefixCache ? { prefixCache: { entries: e.prefixCache.entries ?? 8, maxMiB: e.prefixCache.maxMiB ?? 256 } } : {}),
                };
  const model: ResolvedModel = {
    name,
    ...(tokenizer ? { tokenizer } : {}),
    toolCallFormat: spec.toolCallFormat ?? "qwen3",
    reasoning: spec.reasoning === undefined ? { start: "<think>", end: "</think>" } : spec.reasoning,
    stopTokens: stopTokens ?? ["<|im_end|>"],
    maxContextTokens: spec.maxContextTokens ?? 32768,
    sampling: {
      temperature: spec.sampling?.temperature ?? 1,
      topP: spec.sampling?.topP ?? 1,
      maxTokens: spec.sampling?.maxTokens ?? 2048,
    },
    engine,
  };
  if (chatTemplate !== undefined) model.chatTemplate = chatTemplate;
  if (chatTemplateVariables) model.chatTemplateVariables = chatTemplateVariables;
  if (spec.proxy) {
    const set = Object.entries(spec.proxy).filter(([, v]) => v !== undefined);
    if (set.length > 0) model.proxy = Object.fromEntries(set);
  }
  return { model, problems };
}

/**
 * A `{type: file}` tokenizer.json and the tokenizer_config.json the runtime reads beside it: inside
 * the project, regular files within their caps. Nothing is read here (the runtime loads them); a
 * file that does not exist yet is the runtime's to report (reins creates some on the first run).
 */
function tokenizerFileProblems(path: string, base: string, roots: readonly ProjectRoot[]): HostPathProblem[] {
  const file = checkModelFile(path, base, "tokenizer", roots);
  if (!file.ok) {
    if (file.code === "FileNotFound") return [];
    const hint =
      file.code === "NotRegularFile" ? "Name a regular tokenizer.json; for a Hugging Face directory use tokenizer: {type: huggingface, path: DIR}." : undefined;
    return [modelFileProblem(["tokenizer", "path"], `Tokenizer ${path}`, file, hint)];
  }
  const config = checkModelFile("tokenizer_config.json", dirname(file.path), "config", roots);
  if (!config.ok && config.code !== "FileNotFound") return [modelFileProblem(["tokenizer", "path"], `The tokenizer_config.json beside ${path}`, config)];
  return [];
}

function modelFileProblem(path: string[], what: string, r: Refusal, hint?: string): HostPathProblem {
  const h = hint ?? (r.code === "FileTooLarge" ? MODEL_FILE_TOO_LARGE_HINT : r.code === "OutsideProject" ? MODEL_FILE_OUTSIDE_HINT : undefined);
  return { path, code: r.code, message: `${what} is not read: ${r.why}.`, ...(h ? { hint: h } : {}) };
}

/** A vllm engine: exactly one of baseUrl (a server the user runs) and serve (reins starts one). */
function resolveVllm(
  e: Extract<ModelSpec["engine"], { type: "vllm" }>,
  abs: (p: string) => string,
  maxContextTokens: number,
  problems: HostPathProblem[],
): Extract<ResolvedModel["engine"], { type: "vllm" }> {
  const { serve, ...rest } = e;
  if ((rest.baseUrl === undefined) === (serve === undefined)) {
    problems.push({
      path: ["engine", serve ? "serve" : "type"],
      code: "EngineServeConflict",
      message: serve ? "The vllm engine gives both baseUrl and serve." : "The vllm engine gives neither baseUrl nor serve.",
    });
  }
  if (!serve) return { ...rest };
  return {
    ...rest,
    serve: {
      modelPath: abs(serve.modelPath),
      ...(serve.python !== undefined ? { python: serve.python } : {}),
      maxModelLen: serve.maxModelLen ?? maxContextTokens,
      dtype: serve.dtype ?? "bfloat16",
      args: [...(serve.args ?? [])],
      startTimeoutSeconds: serve.startTimeoutSeconds ?? 600,
    },
  };
}

export function resolveAlgorithm(spec: AlgorithmSpec): ResolvedAlgorithm {
  const c = spec.correction;
  const correction: ResolvedAlgorithm["correction"] =
    !c || c.type === "none"
      ? { type: "none" }
      : c.type === "TIS"
        ? { type: "TIS", level: c.level === "sequence" ? "sequence" : "token", cap: c.cap ?? 2 }
        : { type: "MIS", level: c.level ?? "token", low: c.low ?? 0.5, high: c.high ?? 2 };
  return {
    type: spec.type,
    groupSize: spec.groupSize ?? 8,
    advantage: {
      normalizeStd: spec.advantage?.normalizeStd ?? true,
      dropZeroVariance: spec.advantage?.dropZeroVariance ?? false,
      positiveOnly: spec.advantage?.positiveOnly ?? false,
      gamma: spec.advantage?.gamma ?? 1,
      lambda: spec.advantage?.lambda ?? 1,
    },
    clip: { low: spec.clip?.low ?? 0.2, high: spec.clip?.high ?? 0.28 },
    klCoef: toNumber(spec.klCoef, 0),
    entropyCoef: toNumber(spec.entropyCoef, 0),
    learningRate: toNumber(spec.learningRate, 1e-6),
    correction,
    filters: {
      dropDeadLeaves: spec.filters?.dropDeadLeaves ?? true,
      dropClasses: spec.filters?.dropClasses ?? CALL_CLASSES.filter((c) => c !== "main"),
      maxBranches: spec.filters?.maxBranches ?? 0,
    },
    lossAggregation: spec.lossAggregation ?? "token-mean",
    miniBatches: spec.miniBatches ?? 1,
    warmupSteps: spec.warmupSteps ?? 0,
    adamBetas: spec.adamBetas ? [spec.adamBetas[0], spec.adamBetas[1]] : [0.9, 0.999],
    ...(spec.valueCoef !== undefined || spec.type === "PPO" ? { valueCoef: toNumber(spec.valueCoef, 0.5) } : {}),
  };
}

export function resolveSandbox(spec: SandboxSpec | undefined): ResolvedSandbox {
  const s = spec ?? {};
  const provider = s.provider ?? "local";
  const out: ResolvedSandbox = {
    provider,
    resources: {
      cpu: s.resources?.cpu ?? "1",
      memoryMiB: s.resources?.memoryMiB ?? 2048,
      pids: s.resources?.pids ?? 1024,
      diskMiB: s.resources?.diskMiB ?? 1024,
      openFiles: s.resources?.openFiles ?? 4096,
      cpuSeconds: s.resources?.cpuSeconds ?? 3600,
    },
    network: s.network ?? "proxy-only",
    concurrency: s.concurrency ?? 4,
    timeoutSeconds: s.timeoutSeconds ?? 600,
    retries: s.retries ?? 2,
    warmPool: s.warmPool ?? 0,
  };
  if (s.image !== undefined) out.image = s.image;
  // Absent means mount, so plans that mount keep the hash they had before the field existed.
  if ((s.harnessFiles ?? (provider === "kubernetes" ? "image" : "mount")) === "image") out.harnessFiles = "image";
  if (provider === "kubernetes" || s.kubernetes) {
    out.kubernetes = {
      namespace: s.kubernetes?.namespace ?? "default",
      useSandboxClaims: s.kubernetes?.useSandboxClaims ?? false,
      ttlSeconds: s.kubernetes?.ttlSeconds ?? 3600,
      maxStarting: s.kubernetes?.maxStarting ?? 128,
      startTimeoutSeconds: s.kubernetes?.startTimeoutSeconds ?? 300,
      ...(s.kubernetes?.createsPerSecond !== undefined ? { createsPerSecond: s.kubernetes.createsPerSecond } : {}),
      ...(s.kubernetes?.createBurst !== undefined ? { createBurst: s.kubernetes.createBurst } : {}),
      ...(s.kubernetes?.runtimeClassName ? { runtimeClassName: s.kubernetes.runtimeClassName } : {}),
      ...(s.kubernetes?.proxy ? { proxy: { ...s.kubernetes.proxy } } : {}),
    };
  }
  return out;
}

export function resolveTrainer(spec: TrainerSpec | undefined): ResolvedTrainer {
  const s = spec ?? {};
  const out: ResolvedTrainer = {
    type: "torch",
    mode: s.mode ?? "local",
    device: s.device ?? "cpu",
    gpus: s.gpus ?? 0,
    nodes: s.nodes ?? 1,
    checkpointDir: s.checkpointDir ?? "checkpoints",
    weightsFormat: s.weightsFormat ?? ["onnx", "safetensors"],
    python: s.python ?? "/usr/bin/python3",
  };
  if (s.image !== undefined) out.image = s.image;
  if (out.mode === "kubernetes") out.worker = s.worker ?? "cluster";
  return out;
}

/** A Trainer's fields that contradict each other: worker without mode kubernetes. */
export function checkTrainer(spec: TrainerSpec, at: (...p: (string | number)[]) => SourcePosition): Diagnostic[] {
  if (spec.worker === undefined || spec.mode === "kubernetes") return [];
  return [
    makeDiagnostic(
      "InvalidValue",
      at("worker"),
      "worker says where a kubernetes trainer's worker runs; this Trainer's mode is local, so it would do nothing.",
      "Remove worker, or set mode: kubernetes.",
    ),
  ];
}

/** Default: stop at the first non-finite step; with skip, at most 3 consecutive skipped steps. */
export function resolveBadStepPolicy(spec: ExperimentSpec["onBadStep"]): BadStepPolicy {
  return { action: spec?.action ?? DEFAULT_BAD_STEP_POLICY.action, maxSkips: spec?.maxSkips ?? DEFAULT_BAD_STEP_POLICY.maxSkips };
}

/** Metric sinks: TensorBoard off unless asked; a W&B run is offline. */
export function resolveMetricsSinks(spec: NonNullable<ExperimentSpec["metrics"]>): MetricsSinks {
  return { tensorboard: spec.tensorboard ?? false, ...(spec.wandb ? { wandb: { project: spec.wandb.project, mode: spec.wandb.mode ?? "offline" } } : {}) };
}
