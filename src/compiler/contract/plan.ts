/**
 * The plan and the Resolved* types: what the planner produces and the runtime consumes.
 * The runtime imports only the compiler's front door and this folder.
 * Users write *Spec types (src/compiler/schema); the compiler turns them into these. Where a
 * resolved type mirrors a schema (enums, scripted turns, call-class rules, defaults filled in),
 * it is derived from the zod schema through type-only imports, so the two cannot drift and this
 * file still loads nothing at run time.
 *
 * Paths: every host path in a plan (model tokenizer and onnx files, harness mounts) is absolute,
 * resolved once by the compiler against the spec file that names it (relative paths in specs are
 * relative to their file; the files named on the command line are relative to the caller's cwd,
 * recorded as `Plan.root`). The plan hash sees these paths relative to `Plan.root`, so it is the
 * same on every machine and in every checkout (see `portablePlan` in src/compiler/plan/paths.ts).
 */
import type { z } from "zod";
import type { AlgorithmSpecSchema } from "../schema/algorithm.js";
import type { BadStepPolicy as BadStepPolicySchema, MetricsSinks as MetricsSinksSchema } from "../schema/experiment.js";
import type { CallClassRuleSchema, HarnessKnobsSchema, HarnessSpecSchema, REFERENCE_TOOL_NAMES, ReferenceToolSchema } from "../schema/harness.js";
import type { EngineSpec, ModelSpecSchema, ScriptedTurnSpec } from "../schema/model.js";
import type { SandboxSpecSchema, TrainerSpecSchema } from "../schema/sandbox.js";
import type { CombineSpecSchema } from "../schema/verifier.js";
import type { CallClass, Dialect, HostedApi } from "./vocabulary.js";

export { CALL_CLASSES, DIALECTS, type CallClass, type Dialect } from "./vocabulary.js";

/** `T` with every optional field required (defaults filled in) and `undefined` removed. */
type Filled<T> = { [K in keyof T]-?: Exclude<T[K], undefined> };
type AlgorithmSpec = z.output<typeof AlgorithmSpecSchema>;
type ModelSpec = z.output<typeof ModelSpecSchema>;
type SandboxSpec = z.output<typeof SandboxSpecSchema>;
type TrainerSpec = z.output<typeof TrainerSpecSchema>;
type EngineOf<T extends string> = Extract<z.output<typeof EngineSpec>, { type: T }>;

/** A workspace file after resolution. `content` is UTF-8 text unless `encoding: base64`. */
export interface ResolvedFile {
  /** Relative POSIX path inside the workspace; never absolute, never escapes (checked by the compiler). */
  path: string;
  content: string;
  encoding: "utf8" | "base64";
  /** Octal file mode, e.g. 0o644 or 0o755. */
  mode: number;
  /** "sha256:<hex>" of the decoded bytes. */
  digest: string;
}

export type ResolvedCheck = { type: string; [key: string]: unknown };

export interface ResolvedVerifier {
  /** Name when it came from a Verifier document; "inline" otherwise. */
  name: string;
  checks: ResolvedCheck[];
  script?: { command: string[]; timeoutSeconds: number };
  /** `judge`: the Model that grades the rubric; in a plan, set for every rubric (the policy's name when the spec names none). */
  rubric?: { judge?: string; items: { id: string; criterion: string; weight: number }[]; files: string[] };
  combine: { mode: z.output<typeof CombineSpecSchema>["mode"]; weights: Record<string, number> };
  /** Reward at or above which an attempt counts as passed (pass@k). */
  passThreshold: number;
}

/**
 * An MCP server of a rollout: declared in a Task, a TaskFamily's template (rendered per task), a
 * Harness or an Experiment/Evaluation (`mcpServers`). Every server is a stdio MCP server that reins
 * starts fresh for every try of every rollout and stops with it; the harness reaches it over MCP's
 * streamable HTTP at `<rollout base URL>/mcp/<name>` through the proxy, with the rollout's key, and
 * reins records every tools/call in between (so the agent cannot forge or skip the record).
 */
export interface ResolvedMcpServer {
  /** `^[a-z][a-z0-9_-]{0,31}$`, unique among a rollout's servers. */
  name: string;
  /**
   * "sandbox": inside the rollout's own sandbox (it sees the workspace the agent works in);
   * "beside": in a sandbox of its own (no network, its own workspace), which the agent reaches
   * only through MCP, so its state cannot be edited behind the tools' back.
   */
  where: "sandbox" | "beside";
  /** A server shipped with reins (src/runtime/mcp/servers/<shipped>.mjs, run with reins's node); `command` then holds its arguments. */
  shipped?: "web-search" | "tickets";
  /** argv of the stdio server (run in its workspace, node on PATH), or a shipped server's arguments. */
  command: string[];
  /** Environment of the server (nothing else of reins's environment reaches it). */
  env: Record<string, string>;
  /** Files written into the server's sandbox workspace before it starts (for "sandbox", the rollout's workspace). */
  files: ResolvedFile[];
  /** The tools the harness may see and call (others are hidden from tools/list and refused); null: all. */
  tools: string[] | null;
  /** Seconds the server may take to answer MCP's initialize; past it the try is an infrastructure failure. */
  startupSeconds: number;
  /** The largest arguments of one tools/call (JSON, UTF-8 bytes); absent: 1 MiB (src/runtime/mcp/limits.ts). */
  maxArgumentBytes?: number;
  /** The largest message the server may write (one JSON line, bytes); absent: 4 MiB. */
  maxResultBytes?: number;
}

/** How a harness is told about a rollout's MCP servers (its spec's `mcp`); applied only when the rollout has any. */
export interface ResolvedHarnessMcp {
  /** Appended to argv; templates over the launch variables plus `mcpServers`. */
  args: string[];
  /** Added to the environment; templated likewise. */
  env: Record<string, string>;
  /** Written into HOME; templated likewise. */
  homeFiles: { path: string; content: string }[];
  /** How the model names tool {{tool}} of server {{server}} here (default "{{server}}__{{tool}}"). */
  toolName: string;
}

export interface ResolvedTask {
  name: string;
  category: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  instruction: string;
  files: ResolvedFile[];
  /** Files only the verifier sees. */
  hiddenFiles: ResolvedFile[];
  verifier: ResolvedVerifier;
  timeoutSeconds: number;
  /** Set when the task gave no timeoutSeconds: the plan's Sandbox timeoutSeconds applies (default 600). */
  timeoutDefaulted?: boolean;
  /** Reference solution as model turns (for SFT data through a real harness). */
  reference?: ScriptedTurn[];
  /** Set when the task came from a TaskFamily. */
  provenance?: { family: string; parameters: Record<string, unknown>; hash: string };
  /** "sha256:<hex>" of the canonical task (instruction, files, verifier, timeout, MCP servers). */
  digest: string;
  /** The task's MCP servers: the Experiment's/Evaluation's first, then the task's own (or its family template's); absent when none (so plans without any hash as before). */
  mcpServers?: ResolvedMcpServer[];
}

/** A rule classifying calls: all present `match` conditions must hold. */
export type ResolvedCallClassRule = z.output<typeof CallClassRuleSchema> & { class: CallClass };

export interface ResolvedHarness {
  name: string;
  /** Absent for plain command harnesses that never call the model. */
  dialect?: Dialect;
  install?: z.output<typeof HarnessSpecSchema>["install"];
  /** argv, Handlebars templates over {instruction, workspace, model, baseUrl, apiKey}. */
  command: string[];
  /**
   * Env vars; values are Handlebars templates over {baseUrl, apiKey, model, workspace, home}.
   * `${VAR}` / `${VAR:-default}` references are kept as written (never substituted by the
   * compiler, so secrets never reach plan.json) and resolved from reins's own environment when the
   * harness is launched; `$${...}` stands for a literal `${...}`.
   */
  env: Record<string, string>;
  /** Files written into the harness's HOME before launch (config files), templated like env, references included. */
  homeFiles: { path: string; content: string }[];
  /** Env/config that stops the harness's other traffic (telemetry, updates). Merged into env. */
  optOuts: Record<string, string>;
  /** Model name the harness is told to use. */
  model: string;
  callClasses: ResolvedCallClassRule[];
  /** Extra seconds a harness needs to start (documented startup cost). */
  startupSeconds: number;
  /** Read-only host paths shown in the sandbox; hostPath absolute. */
  mounts: { hostPath: string; sandboxPath: string }[];
  /** reins workspace tool → this harness's tool call (templates over the reins tool's arguments). */
  referenceTools?: Partial<Record<ReferenceToolName, ReferenceTool>>;
  /** How the harness applies each knob it supports (its spec's `knobs`); absent when it declares none. */
  knobs?: z.output<typeof HarnessKnobsSchema>;
  /** The knobs an Experiment or Evaluation set for this harness; applied when it is launched, part of the plan hash. */
  knobValues?: HarnessKnobValues;
  /** MCP servers every rollout of this harness gets (its spec's `mcpServers`), after the task's; absent when none. */
  mcpServers?: ResolvedMcpServer[];
  /** How to tell the harness about MCP servers; absent when it cannot take any (a plan giving it some is a compile error). */
  mcp?: ResolvedHarnessMcp;
}

/** Settings of a harness for one Experiment or Evaluation (`harnesses[]`), applied as its spec's `knobs` say. */
export interface HarnessKnobValues {
  systemPrompt?: string;
  appendSystemPrompt?: string;
  tools?: string[];
  maxTurns?: number;
}

/** A reins workspace tool (write_file, read_file, list_files, run_command). */
export type ReferenceToolName = (typeof REFERENCE_TOOL_NAMES)[number];
export type ReferenceTool = z.output<typeof ReferenceToolSchema>;

export interface ResolvedModel {
  name: string;
  /** File paths (tokenizer, onnx model) are absolute. Absent only for a hosted engine (text in, text out). */
  tokenizer?: NonNullable<ModelSpec["tokenizer"]>;
  /** Jinja chat template text (a huggingface tokenizer's own, read at compile time); when absent the tokenizer package's own template is used. */
  chatTemplate?: string;
  /** Named special tokens (bos_token, eos_token, ...) the chat template sees, from a huggingface tokenizer's directory. */
  chatTemplateVariables?: Record<string, string>;
  toolCallFormat: Filled<ModelSpec>["toolCallFormat"];
  /** Reasoning markers; null when the model has none. */
  reasoning: Exclude<ModelSpec["reasoning"], undefined>;
  /** Token strings that end a completion (e.g. "<|im_end|>"). */
  stopTokens: string[];
  maxContextTokens: number;
  sampling: Filled<Filled<ModelSpec>["sampling"]>;
  engine: ResolvedEngine;
  /** The proxy's per-request limits the spec sets (absent: all defaults, see src/runtime/proxy/limits.ts). */
  proxy?: NonNullable<ModelSpec["proxy"]>;
}

/**
 * The inference engine. openai-compatible: `api` is vLLM/SGLang `/v1/completions` (default) or
 * llama-server `/completion`; `apiKeyEnv` names the variable holding the key. onnx: `modelPath`
 * is absolute; `prefixCache` is present only when the spec turns it on (its limits filled).
 * vllm, sglang, llama-cpp: a probed server of that kind (src/runtime/engines/probe.ts), as written.
 */
export type ResolvedEngine =
  | { type: "scripted"; script: ScriptedTurn[] }
  | EngineOf<"openai-compatible">
  | (Omit<EngineOf<"vllm">, "serve"> & { serve?: ResolvedVllmServe })
  | EngineOf<"sglang">
  | EngineOf<"llama-cpp">
  | ({ type: "hosted" } & ResolvedHostedApi)
  | (Filled<Omit<EngineOf<"onnx">, "prefixCache">> & { modelPath: string; prefixCache?: { entries: number; maxMiB: number } });

/**
 * A model behind a hosted API (engine type hosted, a Synthesis's hosted generator): baseUrl
 * without a trailing slash; the key is read from `apiKeyEnv` when asking, never stored.
 */
export interface ResolvedHostedApi {
  api: HostedApi;
  model: string;
  baseUrl: string;
  apiKeyEnv: string;
  timeoutSeconds: number;
}

/**
 * A vLLM server reins starts itself (engine.serve): `modelPath` absolute; `python` absent means
 * the scale venv's (resolved on the machine that runs it); maxModelLen defaults to the Model's
 * maxContextTokens, dtype to bfloat16, startTimeoutSeconds to 600.
 */
export interface ResolvedVllmServe {
  modelPath: string;
  python?: string;
  maxModelLen: number;
  dtype: "auto" | "bfloat16" | "float16" | "float32";
  args: string[];
  startTimeoutSeconds: number;
}

/**
 * One scripted model turn: rendered in the model's output format, then tokenized. `raw` is used
 * verbatim (malformed-output tests); `finish` defaults to "stop" ("tool_calls" with tool calls);
 * `fault` fails the call with an engine error or cuts the stream (fault injection).
 */
export type ScriptedTurn = z.output<typeof ScriptedTurnSpec>;

export interface ResolvedAlgorithm {
  type: AlgorithmSpec["type"];
  groupSize: number;
  advantage: Filled<Filled<AlgorithmSpec>["advantage"]>;
  clip: Filled<Filled<AlgorithmSpec>["clip"]>;
  klCoef: number;
  entropyCoef: number;
  learningRate: number;
  correction:
    | { type: "none" }
    | { type: "TIS"; level: "token" | "sequence"; cap: number }
    | { type: "MIS"; level: "token" | "sequence" | "geometric"; low: number; high: number };
  filters: {
    dropDeadLeaves: boolean;
    /** Call classes whose branches are dropped. */
    dropClasses: CallClass[];
    /** Rollouts with more kept leaves than this are dropped; 0 = no limit. */
    maxBranches: number;
  };
  lossAggregation: Filled<AlgorithmSpec>["lossAggregation"];
  /** Optimizer steps per training step (the step's rollouts split into this many mini-batches). */
  miniBatches: number;
  /** RL optimizer steps of linear learning-rate warmup (0: none). */
  warmupSteps: number;
  /** Adam's (beta1, beta2) for RL's optimizer steps. */
  adamBetas: [number, number];
  /** PPO only: weight of the critic's value loss in the objective (absent for GRPO/RLOO). */
  valueCoef?: number;
}

export interface ResolvedSandbox {
  provider: Filled<SandboxSpec>["provider"];
  image?: string;
  /** How harness files reach the sandbox: "image" (built by reins), or absent: mounted from the host. */
  harnessFiles?: "image";
  resources: Filled<Filled<SandboxSpec>["resources"]>;
  network: Filled<SandboxSpec>["network"];
  /** Not part of the plan hash. */
  concurrency: number;
  timeoutSeconds: number;
  /** Not part of the plan hash. */
  retries: number;
  warmPool: number;
  kubernetes?: Omit<Filled<Filled<SandboxSpec>["kubernetes"]>, "runtimeClassName" | "proxy" | "createsPerSecond" | "createBurst"> & {
    runtimeClassName?: string;
    proxy?: ResolvedPodProxy;
    /** Absent: no creation-rate limit. */
    createsPerSecond?: number;
    createBurst?: number;
  };
}

/** How sandbox pods reach the proxy: an address of this machine, or a Service in front of reins in the cluster. */
export type ResolvedPodProxy = NonNullable<NonNullable<SandboxSpec["kubernetes"]>["proxy"]>;

export interface ResolvedTrainer {
  type: Filled<TrainerSpec>["type"];
  mode: Filled<TrainerSpec>["mode"];
  device: Filled<TrainerSpec>["device"];
  gpus: number;
  nodes: number;
  checkpointDir: string;
  weightsFormat: Filled<TrainerSpec>["weightsFormat"];
  python: string;
  image?: string;
  /** mode kubernetes only: where the worker process runs (the Job is on the cluster either way). */
  worker?: "cluster" | "local";
}

/**
 * What `reins run` does with a step the trainer refuses as non-finite: `stop`, or `skip` until more
 * than `maxSkips` consecutive steps were skipped. Not part of the plan hash.
 */
export type BadStepPolicy = Filled<NonNullable<z.output<typeof BadStepPolicySchema>>>;

/** The compiler's default policy; the runtime uses it for plans written before the field existed. */
/** Where an Experiment's metrics go besides metrics.jsonl (TensorBoard, a W&B offline run). */
export interface MetricsSinks {
  tensorboard: boolean;
  wandb?: { project: string; mode: NonNullable<NonNullable<NonNullable<z.output<typeof MetricsSinksSchema>>["wandb"]>["mode"]> };
}

export const DEFAULT_BAD_STEP_POLICY: Readonly<BadStepPolicy> = Object.freeze({ action: "stop", maxSkips: 3 });

export interface PlanPair {
  /** "<task>@<harness>" */
  id: string;
  task: string;
  harness: string;
  weight: number;
}

/**
 * One rollout. It carries no seed of its own: what it samples is fixed by the onnx engine's seed
 * (the plan's) and its id — deriveSeed(engine seed, "sampling", id, seq, try) for each call
 * (contract/seeds.ts) — whatever runs beside it.
 */
export interface PlanRollout {
  /** Stable id: "<step>-<pairIndex>-<attempt>" style, unique in the plan. */
  id: string;
  pair: string;
  task: string;
  harness: string;
  attempt: number;
}

export interface PlanStep {
  index: number;
  kind: "sample" | "eval";
  rollouts: PlanRollout[];
  /** "sha256:<hex>" of the canonical step (hash-relevant fields only). */
  hash: string;
}

/**
 * What an Experiment's steps are made from before its seed shuffles the task order and the harness
 * mix (plan/schedule.ts). A multi-seed plan carries it, so that each seed's
 * plan is re-derived from the plan alone (plan/seeds.ts).
 */
export interface PlanSchedule {
  /** The training tasks in the order they were selected (the seed shuffles it). */
  training: string[];
  /** The held-out tasks (every one through every harness at each evaluation). */
  heldOut: string[];
  /** Training steps, and tasks sampled per step (each in a group of `groupSize` rollouts). */
  steps: number;
  tasksPerStep: number;
  groupSize: number;
  /** A held-out evaluation after every this many steps (0: only before and after). */
  evalEverySteps: number;
  /** In the plan's harness order: the mix weight and the held-out attempts of each. */
  harnesses: { name: string; weight: number; heldOutAttempts: number }[];
}

export interface Plan {
  planVersion: 1;
  kind: "Experiment" | "Evaluation";
  name: string;
  /** "sha256:<hex>" of the canonical plan without volatile settings. */
  hash: string;
  seed: number;
  model?: ResolvedModel;
  /** The Models that grade rubrics, other than the policy (`model`); each rubric's `judge` names one of them or the policy. */
  judges?: ResolvedModel[];
  algorithm?: ResolvedAlgorithm;
  sandbox: ResolvedSandbox;
  trainer?: ResolvedTrainer;
  tasks: ResolvedTask[];
  heldOutTasks: string[];
  harnesses: ResolvedHarness[];
  pairs: PlanPair[];
  steps: PlanStep[];
  attempts: number;
  /** Supervised warm-up on reference solutions (Experiment only). */
  sft?: {
    steps: number;
    learningRate: number;
    batchSize: number;
    when: "if-untrained" | "always";
    /** Adam's (beta1, beta2) for SFT's optimizer steps. */
    adamBetas: [number, number];
    /** The optimizer state RL starts from after SFT: `reset` (fresh Adam moments) or `keep` (SFT's). */
    optimizerState: "reset" | "keep";
    /** Harness → how many training tasks' references are replayed through it (absent: every one). */
    referencesPerHarness?: Record<string, number>;
    /** Stop once the loss per trained token, averaged over the last SFT_LOSS_WINDOW steps, is below this (absent: run `steps`). */
    targetLoss?: number;
  };
  /** Non-finite training steps: stop or skip (set on every Experiment plan; not part of the plan hash). */
  onBadStep?: BadStepPolicy;
  /** Metric sinks besides metrics.jsonl (Experiment only, when its spec asks; not part of the plan hash). */
  metrics?: MetricsSinks;
  /**
   * A multi-seed Experiment (`seeds`, or `reins run --seeds`): the seeds, each run as its own plan
   * (`planForSeed`); `seed`, the steps and the model's engine seed are then the first seed's, the
   * tasks those of any seed, and the estimate covers every seed. Absent with one seed (such plans
   * hash as before), as is `schedule`.
   */
  seeds?: number[];
  /** Present with `seeds`: what each seed's steps are re-derived from. */
  schedule?: PlanSchedule;
  /** Kubernetes objects the kubernetes provider/trainer would create (pure builders). */
  manifests: Record<string, unknown>[];
  estimate: { rollouts: number; sandboxMinutes: number; tokens: number };
  sources: { file: string; digest: string }[];
  /**
   * The caller's cwd when the plan was made (absolute): spec paths given on the command line are
   * relative to it, and the plan hash sees host paths relative to it. Not hashed.
   */
  root: string;
}
