/**
 * The plan and the Resolved* types: what the planner produces and the runtime consumes.
 * The runtime imports only this file (and diagnostics) from the compiler.
 * Users write *Spec types (src/compiler/schema); the compiler turns them into these.
 */

export type Dialect = "anthropic-messages" | "openai-chat" | "openai-responses";
export const DIALECTS: readonly Dialect[] = ["anthropic-messages", "openai-chat", "openai-responses"];

export type CallClass = "main" | "subagent" | "compaction" | "title" | "auxiliary";

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
  combine: { mode: "weighted" | "all" | "min" | "any"; weights: Record<string, number> };
  /** Reward at or above which an attempt counts as passed (pass@k). */
  passThreshold: number;
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
  /** Reference solution as model turns (for SFT data through a real harness). */
  reference?: ScriptedTurn[];
  /** Set when the task came from a TaskFamily. */
  provenance?: { family: string; parameters: Record<string, unknown>; hash: string };
  /** "sha256:<hex>" of the canonical task (instruction, files, verifier, timeout). */
  digest: string;
}

export interface ResolvedCallClassRule {
  class: CallClass;
  /** All present conditions must hold. */
  match: {
    noTools?: boolean;
    systemPromptIncludes?: string;
    modelIncludes?: string;
    headerEquals?: { name: string; value: string };
  };
}

export interface ResolvedHarness {
  name: string;
  /** Absent for plain command harnesses that never call the model. */
  dialect?: Dialect;
  install?: { npm?: string; node?: string; image?: string; bin?: string };
  /** argv, Handlebars templates over {instruction, workspace, model, baseUrl, apiKey}. */
  command: string[];
  /** Env vars; values are Handlebars templates over {baseUrl, apiKey, model, workspace, home}. */
  env: Record<string, string>;
  /** Files written into the harness's HOME before launch (config files), templated like env. */
  homeFiles: { path: string; content: string }[];
  /** Env/config that stops the harness's other traffic (telemetry, updates). Merged into env. */
  optOuts: Record<string, string>;
  /** Model name the harness is told to use. */
  model: string;
  callClasses: ResolvedCallClassRule[];
  mcpServers: { name: string; command: string[] }[];
  /** Extra seconds a harness needs to start (documented startup cost). */
  startupSeconds: number;
  /** Read-only host paths shown in the sandbox; hostPath relative to Plan.root. */
  mounts: { hostPath: string; sandboxPath: string }[];
}

export interface ResolvedModel {
  name: string;
  /** File paths (tokenizer, onnx model) are relative to Plan.root (or the cwd outside a plan). */
  tokenizer: { type: "qwen3" } | { type: "file"; path: string };
  /** Jinja chat template text; when absent the tokenizer package's own template is used. */
  chatTemplate?: string;
  toolCallFormat: "qwen3" | "hermes" | "none";
  reasoning: { start: string; end: string } | null;
  /** Token strings that end a completion (e.g. "<|im_end|>"). */
  stopTokens: string[];
  maxContextTokens: number;
  sampling: { temperature: number; topP: number; maxTokens: number };
  engine: ResolvedEngine;
}

export type ResolvedEngine =
  | { type: "scripted"; script: ScriptedTurn[] }
  | {
      type: "openai-compatible";
      baseUrl: string;
      apiKeyEnv?: string;
      model: string;
      /** Wire API: vLLM/SGLang `/v1/completions` (default) or llama-server `/completion`. */
      api?: "completions" | "llama-server";
    }
  | { type: "onnx"; modelPath: string; weightsDir?: string; threads: number; seed: number };

/** One scripted model turn: rendered in the model's output format, then tokenized. */
export interface ScriptedTurn {
  reasoning?: string;
  text?: string;
  toolCalls?: { name: string; arguments: Record<string, unknown> | string }[];
  /** Raw completion text, used verbatim (for malformed-output tests). */
  raw?: string;
  /** Finish reason to report; default "stop" (or "tool_calls" when tool calls are present). */
  finish?: "stop" | "length";
  /** Fault injection for tests: fail the call with an engine error or cut the stream. */
  fault?: "engine-error" | "cut-stream";
}

export interface ResolvedAlgorithm {
  type: "GRPO" | "PPO" | "RLOO";
  groupSize: number;
  advantage: { normalizeStd: boolean; dropZeroVariance: boolean; positiveOnly: boolean; gamma: number; lambda: number };
  clip: { low: number; high: number };
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
  lossAggregation: "token-mean" | "sequence-mean" | "sequence-sum";
  /** Optimizer steps per training step (the step's rollouts split into this many mini-batches). */
  miniBatches: number;
  /** PPO only: weight of the critic's value loss in the objective (absent for GRPO/RLOO). */
  valueCoef?: number;
}

export interface ResolvedSandbox {
  provider: "local" | "podman" | "kubernetes";
  image?: string;
  resources: { cpu: string; memoryMiB: number };
  network: "proxy-only" | "none";
  /** Not part of the plan hash. */
  concurrency: number;
  timeoutSeconds: number;
  /** Not part of the plan hash. */
  retries: number;
  warmPool: number;
  kubernetes?: { namespace: string; runtimeClassName?: string; useSandboxClaims: boolean; ttlSeconds: number };
}

export interface ResolvedTrainer {
  type: "torch";
  mode: "local" | "kubernetes";
  device: "cpu" | "cuda";
  gpus: number;
  nodes: number;
  checkpointDir: string;
  weightsFormat: ("onnx" | "safetensors")[];
  python: string;
  image?: string;
}

/** What `reins run` does with a step the trainer refuses as non-finite. Not part of the plan hash. */
export interface BadStepPolicy {
  action: "stop" | "skip";
  /** With skip: more consecutive skipped steps than this stop the run. */
  maxSkips: number;
}

export interface PlanPair {
  /** "<task>@<harness>" */
  id: string;
  task: string;
  harness: string;
  weight: number;
}

export interface PlanRollout {
  /** Stable id: "<step>-<pairIndex>-<attempt>" style, unique in the plan. */
  id: string;
  pair: string;
  task: string;
  harness: string;
  attempt: number;
  seed: number;
}

export interface PlanStep {
  index: number;
  kind: "sample" | "eval";
  rollouts: PlanRollout[];
  /** "sha256:<hex>" of the canonical step (hash-relevant fields only). */
  hash: string;
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
  sft?: { steps: number; learningRate: number; batchSize: number; when: "if-untrained" | "always" };
  /** Non-finite training steps: stop or skip (Experiment only; not part of the plan hash). */
  onBadStep?: BadStepPolicy;
  /** Kubernetes objects the kubernetes provider/trainer would create (pure builders). */
  manifests: Record<string, unknown>[];
  estimate: { rollouts: number; sandboxMinutes: number; tokens: number };
  sources: { file: string; digest: string }[];
  /** Absolute directory the plan was made in; relative paths in the plan resolve against it. Not hashed. */
  root: string;
}
