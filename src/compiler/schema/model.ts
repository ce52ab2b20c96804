/** Model: tokenizer, chat template, output format, sampling, engine. */
import { z } from "zod";
import { PositiveInt, documentSchema } from "./common.js";
import { HostedApiFields } from "./hosted.js";

const ToolCall = z.strictObject({
  name: z.string().min(1),
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).describe("An object, or a raw (possibly malformed) JSON string."),
});

export const ScriptedTurnSpec = z
  .strictObject({
    reasoning: z.string().optional(),
    text: z.string().optional(),
    toolCalls: z.array(ToolCall).optional(),
    raw: z.string().optional().describe("Raw completion text used verbatim."),
    finish: z.enum(["stop", "length"]).optional(),
    fault: z.enum(["engine-error", "cut-stream"]).optional(),
    harnesses: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        "Given only to rollouts of these harnesses (by name); a rollout's script is the turns for its harness, in order. Default: every harness. Lets one scripted policy speak each harness's own tools in one Evaluation.",
      ),
  })
  .describe("One scripted model turn.");

const LogprobsMode = z.enum(["raw", "temperature", "processed"]);

export const VllmServeSpec = z
  .strictObject({
    modelPath: z
      .string()
      .min(1)
      .describe(
        "Hugging Face-style model directory (config.json + safetensors), relative to the spec file. A directory without a policy (no READY file) gets the project's tiny initial policy, as reins run creates it.",
      ),
    python: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The Python that has vllm (default: the scale venv of scripts/install-python.sh: $REINS_SCALE_PYTHON_DIR/bin/python, else ~/.cache/reins/scale-python/bin/python). Allowed: an interpreter inside the project (relative to this spec file, e.g. .venv/bin/python), in a Python environment reins installs ($REINS_SCALE_PYTHON_DIR, else ~/.cache/reins/scale-python; $REINS_METRICS_PYTHON_DIR, else ~/.cache/reins/metrics-python; $REINS_METRICS_PYTHON), or listed in REINS_ALLOWED_PYTHON (':'-separated absolute paths of interpreters or directories, read from reins's environment); anything else is refused (PythonNotAllowed).",
      ),
    maxModelLen: PositiveInt.optional().describe("--max-model-len (default: the Model's maxContextTokens)."),
    dtype: z.enum(["auto", "bfloat16", "float16", "float32"]).optional().describe("--dtype (default bfloat16)."),
    args: z.array(z.string()).optional().describe("Extra command-line flags for vLLM's api_server, appended as given."),
    startTimeoutSeconds: PositiveInt.optional().describe("How long to wait for the server to answer /v1/models (default 600)."),
  })
  .describe(
    "reins starts the vLLM server itself for the command's lifetime (reins eval, reins run) on a free loopback port and stops it at the end: python -m vllm.entrypoints.openai.api_server --model DIR --served-model-name MODEL --enforce-eager --skip-tokenizer-init, with VLLM_SERVER_DEV_MODE=1 (reload routes), telemetry off, its output in the run directory's vllm-server.log.",
  );

export const EngineSpec = z
  .discriminatedUnion("type", [
    z.strictObject({
      type: z.literal("scripted"),
      script: z.array(ScriptedTurnSpec).describe("Turns answered in order, per rollout."),
    }),
    z.strictObject({
      type: z.literal("openai-compatible"),
      baseUrl: z.string().min(1).describe("e.g. http://vllm:8000/v1"),
      apiKeyEnv: z.string().optional().describe("Name of the env var holding the key (never the key itself)."),
      model: z.string().min(1),
      api: z
        .enum(["completions", "llama-server"])
        .optional()
        .describe("completions: vLLM/SGLang /v1/completions with token ids (default); llama-server: its /completion endpoint."),
    }),
    z.strictObject({
      type: z.literal("vllm"),
      baseUrl: z
        .string()
        .min(1)
        .optional()
        .describe("The vLLM server you run, e.g. http://vllm:8000 (a trailing /v1 is allowed). Exactly one of baseUrl and serve."),
      serve: VllmServeSpec.optional(),
      model: z.string().min(1).describe("The served model name (its --served-model-name or --model)."),
      apiKeyEnv: z.string().optional().describe("Name of the env var holding the key (never the key itself)."),
      logprobsMode: LogprobsMode.optional().describe(
        "The logprobs the server returns, where its /server_info (VLLM_SERVER_DEV_MODE=1) does not say: raw (default, vLLM's raw_logprobs) or processed (--logprobs-mode processed_logprobs). A server that says otherwise is an error.",
      ),
    }),
    z.strictObject({
      type: z.literal("sglang"),
      baseUrl: z.string().min(1).describe("The SGLang server, e.g. http://sglang:30000."),
      model: z.string().min(1).describe("The served model name (labels the first weights version)."),
      apiKeyEnv: z.string().optional().describe("Name of the env var holding the key (never the key itself)."),
      logprobsMode: LogprobsMode.optional().describe(
        "The logprobs the server returns: temperature (default: SGLang's, after temperature, before top-p), raw (SGLANG_RETURN_ORIGINAL_LOGPROB=1) or processed.",
      ),
    }),
    z.strictObject({
      type: z.literal("llama-cpp"),
      baseUrl: z.string().min(1).describe("The llama.cpp server (llama-server), e.g. http://localhost:8080. Evaluation only: it cannot load new weights."),
      model: z.string().min(1).optional().describe("A label for the weights it serves (default: llama.cpp)."),
      apiKeyEnv: z.string().optional().describe("Name of the env var holding the key (never the key itself)."),
    }),
    z.strictObject({
      type: z.literal("onnx"),
      modelPath: z.string().min(1).describe("ONNX causal LM (log-softmax output)."),
      threads: PositiveInt.optional().describe(
        "onnxruntime's intra-op threads of each generating thread (default 1): a tiny policy gains nothing from more, and the engine shares the machine with the sandboxes and the trainer.",
      ),
      parallel: PositiveInt.optional().describe(
        "Generations at once on threads of their own (default 1: one at a time, in reins's process), each thread with its own onnxruntime session (the weights loaded once per thread, ~1.7 s of CPU to start one); a rollout's calls go to one thread. 2 on a machine with a core to spare: 1.45× the quickstart's held-out evaluation on 2 cores.",
      ),
      seed: z.number().int().optional(),
      prefixCache: z
        .strictObject({
          entries: PositiveInt.optional().describe("Token sequences kept (default 8): each rollout's latest prompt plus completion, and recent prompts."),
          maxMiB: PositiveInt.optional().describe("KV bytes kept, in MiB (default 256); a sequence larger than this on its own is not kept."),
        })
        .optional()
        .describe(
          "Reuse the KV of the longest stored token prefix of each prompt (a harness's shared system prompt and tools across a step's rollouts; a call that extends the previous one), per weights version, least recently used evicted; each generating thread (parallel) keeps its own. Off when absent: a reused prefix equals a full prefill only up to float rounding, and which prompts hit depends on the order of concurrent calls.",
        ),
    }),
    z
      .strictObject({ type: z.literal("hosted"), ...HostedApiFields })
      .describe(
        "A model behind a hosted API, without token ids: a rubric judge, or the policy of an Evaluation, whose harnesses' requests the proxy passes through (a harness must speak the API's dialect). Evaluation only: an Experiment cannot train it. A hosted Model has no tokenizer, chat template, toolCallFormat, reasoning or stopTokens (the API has its own).",
      ),
  ])
  .describe("Inference engine: completion by token ids with logprobs (hosted: text only).");

export const ProxyLimitsSpec = z
  .strictObject({
    maxBodyBytes: PositiveInt.optional().describe("Request body bytes, before and after decompression (default 16 MiB); larger bodies get 413."),
    maxJsonDepth: PositiveInt.optional().describe("Nesting depth of the request JSON (default 64)."),
    maxJsonValues: PositiveInt.optional().describe("Array elements and object members in the request JSON (default 200000)."),
    maxMessageChars: PositiveInt.optional().describe(
      "Characters of one message: text, reasoning and tool-call arguments (default maxContextTokens × 16); larger gets 413.",
    ),
    maxToolArgumentChars: PositiveInt.optional().describe("Characters of one tool call's arguments (default maxContextTokens × 16)."),
    promptCharsPerToken: z
      .number()
      .min(1)
      .max(128)
      .optional()
      .describe("A prompt whose new text has more characters than this many per context token left is refused before tokenizing (default 16)."),
    maxRequestsPerRollout: PositiveInt.optional().describe("Requests one rollout may have open at once (default 32); more get 429."),
    bodyTimeoutMs: PositiveInt.optional().describe("Time for a request body to arrive after its headers (default 30000); slower bodies get 408."),
    idleTimeoutMs: PositiveInt.optional().describe(
      "Idle keep-alive connections, and requests whose headers take longer, are closed after this (default 60000).",
    ),
    processes: PositiveInt.max(64)
      .optional()
      .describe(
        "Proxy processes behind the one port (default 1), for machines with cores to spare: each rollout is served by one of them, so its token state stays in one place; each builds its own engine client and tokenizer. Not part of the plan hash.",
      ),
  })
  .describe("The serving proxy: per-request limits, checked before the work they bound, and how many processes serve.");

export const ModelSpecSchema = z
  .strictObject({
    tokenizer: z
      .discriminatedUnion("type", [
        z.strictObject({ type: z.literal("qwen3") }),
        z.strictObject({ type: z.literal("file"), path: z.string().min(1).describe("tokenizer.json, relative to the spec file.") }),
        z
          .strictObject({
            type: z.literal("huggingface"),
            path: z
              .string()
              .min(1)
              .describe(
                "A local Hugging Face model or tokenizer directory, relative to the spec file: tokenizer.json, tokenizer_config.json, chat_template.jinja (or chat_template in tokenizer_config.json), generation_config.json, as transformers 4.x and 5.x save them.",
              ),
            template: z
              .string()
              .min(1)
              .optional()
              .describe("Which of the directory's named chat templates to use (default: tool_use when the directory has one, else default)."),
          })
          .describe(
            "The directory's own tokenizer, chat template (rendered with its bos_token, eos_token, pad_token and unk_token, as transformers does) and stop tokens (generation_config.json's eos_token_id, else tokenizer_config.json's eos_token) where the Model gives none.",
          ),
      ])
      .optional()
      .describe("Tokenizer (required, except for a hosted engine, which has none)."),
    chatTemplate: z.string().optional().describe("Jinja chat template; default: the tokenizer's own."),
    chatTemplateFile: z.string().optional().describe("Jinja chat template file, relative to the spec file."),
    toolCallFormat: z.enum(["qwen3", "hermes", "none"]).optional(),
    reasoning: z.union([z.strictObject({ start: z.string().min(1), end: z.string().min(1) }), z.null()]).optional(),
    stopTokens: z
      .array(z.string().min(1))
      .optional()
      .describe("Token strings that end a completion (default: a huggingface tokenizer's eos tokens, else <|im_end|>)."),
    maxContextTokens: PositiveInt.optional(),
    sampling: z
      .strictObject({
        temperature: z.number().min(0).max(10).optional(),
        topP: z.number().gt(0).max(1).optional(),
        maxTokens: PositiveInt.optional(),
      })
      .optional(),
    engine: EngineSpec,
    proxy: ProxyLimitsSpec.optional(),
  })
  .describe("A policy model and the engine that serves it.");

export const ModelDocument = documentSchema("Model", ModelSpecSchema, "A Model: how prompts are rendered and completions produced.");
export type ModelSpec = z.input<typeof ModelSpecSchema>;
