/**
 * The one catalogue of permanent codes, for the compiler and the runtime alike: every Diagnostic,
 * Problem and ReinsError names one of these. Codes are permanent: never rename or reuse one once
 * shipped (a code no longer produced stays here). Each entry is the default hint (what to do);
 * messages (what happened) are built where the problem is found and may carry a sharper hint.
 * test/errors/catalogue.test.ts fails on a code written in src/ that is missing here.
 */
export const CODES = {
  // ── compiler: source files ──
  FileNotFound: "Check the path; relative paths are resolved from the current directory (or from the file that references them).",
  FileUnreadable: "Check the file's permissions.",
  FileTooLarge: "Spec files are limited in size; move large data into workspace directories referenced with `fromDir`.",
  BinaryFile: "This does not look like a YAML text file. Pass only .yaml/.yml spec files or directories containing them.",
  NoSpecFiles: "Pass at least one .yaml/.yml file or a directory containing some.",
  OutsideProject:
    "Specs read only their project: keep the file inside the project root (the directory of the spec files given, or --project-root DIR) and do not reach out through '..', absolute paths or symlinks.",
  NotRegularFile: "Name a regular file (or a directory where one is expected); devices, FIFOs and sockets are never read.",
  NoProjectRoot: "Give the project's directory with --project-root DIR (an existing directory other than /), or pass spec files that share one.",
  DirectoryTooLarge: "Read less from one directory: split it, or keep large data out of specs and workspaces.",
  YamlSyntax: "Fix the YAML syntax at this position.",
  DuplicateKey: "Remove or rename one of the duplicated keys.",
  AliasBomb: "YAML aliases expand too much here. Write the values out instead of nesting aliases.",
  TooDeep: "The document nests too deeply. Flatten the structure.",
  DocumentTooLarge: "Split the document, or write large data into workspace files instead of the spec.",
  EmptyDocument: "Remove the empty document or give it content.",
  UndefinedVariable: "Set the environment variable, or give a default with ${VAR:-default}.",
  SecretOutsideHarnessEnv:
    "Use secrets in a Harness's env or homeFiles (kept as references, read from the environment when the harness starts) or name them with an engine's apiKeyEnv. Not a secret? Rename the variable. A literal? Write $${...}.",
  VariableOutsideHarnessEnv:
    "Only a Harness's env and homeFiles (and the env an Experiment or Evaluation gives a harness) keep ${VAR} as a reference read when the harness starts; an endpoint (baseUrl), image or namespace may name a variable. Elsewhere write the value itself, or $${VAR} for a literal ${VAR} (a shell command's own variable, for example).",
  CredentialsInEndpoint: "An endpoint's URL goes into plan.json: give it no user:password@ and no query. Name the key with the engine's apiKeyEnv instead.",
  // ── compiler: schema ──
  MissingApiVersion: "Add `apiVersion: reins/v1alpha1` to the document.",
  UnsupportedApiVersion: "Use `apiVersion: reins/v1alpha1`.",
  MissingKind: "Add a `kind:` (Task, TaskFamily, Harness, Verifier, Model, Algorithm, Sandbox, Trainer, Experiment, Evaluation).",
  UnknownKind: "Use one of the kinds reins knows.",
  UnknownField: "Remove the field or fix its spelling.",
  InvalidType: "Change the value to the expected type.",
  InvalidValue: "Use one of the allowed values.",
  MissingField: "Add the required field.",
  InvalidName: "Names are lowercase letters, digits and '-', starting with a letter or digit (at most 63 characters).",
  NotSupportedYet: "Remove the field: reins does not support it yet, and it would otherwise be silently ignored.",
  McpServerDuplicate: "Give each of a rollout's MCP servers its own name (the task's, the Experiment's or Evaluation's and the harness's together).",
  McpServerCommandMissing: "Give an MCP server exactly one of `shipped` (web-search, tickets) and `command` (your own stdio server's argv).",
  McpUnsupportedByHarness:
    "Use a harness that calls the model (a `dialect`) and has an `mcp` section saying how it is told of servers (args, env or homeFiles over {{mcpServers}}) — claude-code, codex, openclaw and reins-agent do — or drop the servers.",
  InstructionReadAsOption:
    'Put "--" (end of options) before the instruction in the harness\'s command, e.g. [claude, -p, ..., "--", "{{instruction}}"], or bind it to a flag ("--prompt={{instruction}}"): an instruction that starts with "-" would otherwise be read as an option.',
  PythonNotAllowed:
    "Use an interpreter inside the project (e.g. .venv/bin/python, relative to the spec) or in a venv reins installs (scripts/install-python.sh: $REINS_SCALE_PYTHON_DIR, else ~/.cache/reins/scale-python; scripts/install-metrics-python.sh: $REINS_METRICS_PYTHON_DIR, else ~/.cache/reins/metrics-python), leave `python` out for the default, or list the interpreter (or its directory) in REINS_ALLOWED_PYTHON (':'-separated absolute paths).",
  FieldHasNoEffect: "Remove the field: nothing reads it.",
  // ── compiler: resolve (references, families, templates) ──
  DuplicateName: "Rename one of them: names are unique per kind.",
  UnknownReference: "Define a document with that kind and name, or fix the name.",
  PathEscape: "Workspace paths are relative and stay inside the workspace: no leading '/', no '..' segments.",
  DuplicateWorkspacePath: "Each workspace path may appear once per task.",
  WorkspaceDirNotFound: "Check the `fromDir` path; it is resolved from the file that contains it.",
  TemplateSyntax: "Fix the Handlebars syntax in the template.",
  TemplateUnknownParameter: "Declare the parameter in `parameters` or in the matrix, or fix its name.",
  TemplateUnknownHelper:
    "Use one of the built-in helpers: upper, lower, slug, json, add, sub, mul, div, mod, pad, eq, ne, lt, gt, and, or, not, join, default, indent, repeat, range, pick.",
  TemplateRender: "Fix the template or the parameter values.",
  MatrixEmpty: "The matrix expands to no cells: check `exclude`, or add axes/`include` entries.",
  MatrixTooLarge: "Reduce the matrix: fewer axes or values (the limit on tasks is in the README's limits).",
  TooManyTasks:
    "Reduce the matrices or generate counts, or split the specs into several experiments: the specs given together expand to at most 200,000 tasks.",
  MatrixTooManyEntries: "Use fewer `include`/`exclude` entries, or fewer cells: each entry is compared with every cell.",
  FamilyTooLarge: "Make the template smaller or the matrix smaller: every task renders the whole template.",
  TemplateTooMuchWork: "Loop over fewer items (`range`, `each`) or nest fewer loops; templates are for text, not computation.",
  RenderedTooLarge: "Keep rendered text small: large data belongs in workspace files read with `from` or `fromDir`, not in rendered templates.",
  UnknownMatrixKey: "`exclude` entries name matrix axes; `include` entries name axes or declared parameters. Fix the name, or declare the parameter.",
  MatrixEntryUnused: "The entry matches no cell, so it changes nothing: check its values against the axes.",
  InvalidParameter: "Give the parameter a value of its declared type.",
  MissingParameter: "Give the parameter a value in the matrix, `include`, `generate`, or a default.",
  InvalidCheck: "Fix the check.",
  InvalidVerifier: "Give the verifier at least one part (checks, script or rubric) and weigh only the parts it has.",
  NoPlanTarget: "Add an Experiment or Evaluation document.",
  AmbiguousPlanTarget: "Choose one with --target NAME.",
  NoSynthesisTarget: "Give a file with a `kind: Synthesis` document (or choose one with --target NAME).",
  GeneratorChoice: "Give the generator exactly one of `scripted` (answers from files) and `hosted` (a model behind an API).",
  ScriptedAnswersTooFew: "Give as many answer files as `count`, or lower `count`: a scripted generator answers each candidate from its own file.",
  AlgorithmNotFound: "Give a file with one `kind: Algorithm` document (apiVersion: reins/v1alpha1, a name and a spec with at least `type`).",
  AlgorithmAmbiguous: "Keep one Algorithm document in the file.",
  // ── compiler: semantic checks ──
  GroupSizeTooSmall: "GRPO normalizes rewards within a group; use groupSize 2 or more.",
  UnsupportedDialect: "Use one of the dialects the proxy speaks: anthropic-messages, openai-chat, openai-responses.",
  EngineCannotTrain:
    "Use a vllm or sglang engine to train (they reload the trainer's weights); llama-cpp and hosted models serve evaluations (reins eval) only.",
  ModelRequired: "Harnesses that call a model need a `model` in the Experiment or Evaluation.",
  NoTasksSelected: "Select at least one task: by name, by family, or by labels.",
  PlanTooLarge: "Use fewer steps, tasks per step, a smaller group size or fewer attempts, or split the run.",
  NoHarnesses: "List at least one harness.",
  InvalidWeight: "Weights are positive numbers.",
  HeldOutOverlap: "Keep held-out tasks out of the training selection, e.g. with a split label.",
  SeedAndSeeds: "Give one: `seed` for a single run, or `seeds` for one run per seed (reported with the spread over seeds).",
  DuplicateSeed: "List each seed once: a repeated seed would run the very same plan twice and count it twice in the spread.",
  HarnessKnobUnsupported:
    "Set only the knobs the harness's spec declares under `knobs` (systemPrompt, appendSystemPrompt, tools, maxTurns), or declare how the harness applies this one.",
  HarnessToolUnknown: "Name only the tools the harness's spec lists under `knobs.tools.names` (the harness's own tool names).",
  JudgeRequired:
    "Name the Model that grades the rubric with `rubric.judge`, or give the Experiment or Evaluation a `model` (the policy grades rubrics that name no judge).",
  // ── proxy config and model runtime (tokenizer, chat template) ──
  ProxyModelMissing: "Put exactly one Model document in the proxy config.",
  ProxyModelAmbiguous: "Keep one Model document in the proxy config, or name one.",
  TokenizerNotFound: "Check the tokenizer path; it is resolved from the Model's file.",
  TokenizerInvalid: "Use a Hugging Face tokenizer.json.",
  ChatTemplateMissing: "Give chatTemplate or chatTemplateFile, or use a tokenizer that ships one.",
  ChatTemplateInvalid: "Fix the Jinja chat template.",
  ChatTemplateNotSegmentable: "The chat template must render each message as its own contiguous segment.",
  StopTokenUnknown: "Use stop tokens that exist in the tokenizer's vocabulary.",
  StopTokensMissing: 'Set stopTokens in the Model, e.g. ["<|im_end|>"], or give the directory a generation_config.json with eos_token_id.',
  NotForHostedModel:
    "Remove the field: a hosted model (engine type hosted) is asked in text through its API, which has its own tokenizer, template and stop rules.",
  TokenizerRequired: "Add spec.tokenizer (e.g. {type: qwen3}, or {type: huggingface, path: DIR}): the proxy renders prompts into token ids with it.",
  HostedDialectMismatch:
    "A hosted policy gets each harness's requests as they are: give it harnesses that speak its API (anthropic-messages: Claude Code; openai-chat: OpenClaw, reins-agent), or use a Model with that API for the others.",
  ChatTemplateConflict: "Give either tokenizer.template (one of the directory's templates) or chatTemplate/chatTemplateFile, not both.",
  ChatTemplateUnknown:
    'Set tokenizer.template to one of the directory\'s chat templates (chat_template.jinja is "default"; additional_chat_templates/NAME.jinja is NAME).',
  ChatTemplateTooMuchWork:
    "Make the chat template render in time: loop only over the messages and tools (no large range(), no loops nested over them), and keep it to text; reins stops a render after 200,000 steps plus 1,000 per message and tool, or at 32 Mi characters.",
  DuplicateDocument: "The same file was given twice; it is read once.",

  // ── runtime: run directories and plan files ──
  RunNotFound: "Pass the --out directory of the run to resume.",
  RunExists: "Resume it with --resume DIR, or choose another --out directory.",
  RunLocked: "Wait for the run that holds the directory to end, or stop it; a lock left by a process that died is taken over by the next resume.",
  RunCorrupt: "A file of the run directory is damaged (the message names it); restore it, or start a new run with --out.",
  PlanChanged: "Resume with the specs (or plan file) the run started from, or start a new run with --out.",
  PlanEdited: "A plan file runs only as `reins plan` wrote it: plan the specs again (`reins plan SPECS --out plan.json`) and review that file.",
  InvalidPlan: "Pass a plan.json written by `reins plan --out` (or the plan.json of a run directory).",
  NotAnExperiment: "reins run trains an Experiment; run an Evaluation with reins eval.",
  RunKindMismatch:
    "Resume a run directory with the command that made it: reins eval --resume DIR for an evaluation, reins run --resume DIR for a training run (one seed or several); or start a new run with --out.",
  OutsideRunDirectory:
    "A resumed run reads its checkpoints and weights only inside its run directory (or the Trainer's checkpointDir): restore the run's own events.jsonl, or start a new run with --out.",
  CheckpointFormatOutdated:
    "This checkpoint was written by an older reins as a torch pickle (trainer.pt); reins no longer loads pickles, which run code when loaded. Start a new run with --out.",
  DiskFull:
    "Free space on the file system that holds the run directory (or start the run with --out on another one), then continue it with --resume DIR: nothing finished is lost.",
  Interrupted: "Resume the run with --resume DIR; nothing finished runs again.",

  // ── runtime: sandboxes (infrastructure: retried, never a reward) ──
  SandboxCreateFailed: "Check that the sandbox provider works on this machine (bubblewrap/unshare, podman, or the cluster).",
  SandboxCreateTimeout: "The sandbox was not ready in time; raise the task's timeoutSeconds or lower the concurrency.",
  SandboxDied: "The sandbox ended while in use; check the machine's memory and the provider's logs.",
  SandboxExecFailed: "A command could not be started in the sandbox; check the image and the provider.",
  SandboxTimeout: "The sandbox operation ran past its deadline; lower the concurrency or raise timeoutSeconds.",

  // ── runtime: harnesses ──
  HarnessPackageInvalid: 'Write install.npm as "name@1.2.3" or "@scope/name@1.2.3".',
  HarnessVersionNotPinned: "Pin an exact version in install.npm, e.g. name@1.2.3, so runs are reproducible.",
  HarnessNodeInvalid: 'Give install.node as a major version ("24") or an exact one ("24.22.3").',
  HarnessNotInstallable: 'Add install.npm ("name@1.2.3") or run the harness from a command on PATH.',
  HarnessBinInvalid: "Give install.bin as the name of the package's executable (its package.json `bin`).",
  HarnessBinMissing: "Set install.bin to the executable name the package declares in its package.json `bin`.",
  HarnessInstallFailed: "See the npm log named in the message; check the package name, the version and the registry.",
  HarnessInstallTimedOut: "Check the registry connection, or raise the install timeout.",
  HarnessInstallLocked: "Wait for the other install, or remove the lock directory if no reins process is installing.",
  HarnessNeedsImage: "Run image-based harnesses with a container sandbox provider (podman or kubernetes).",
  HarnessImageFailed:
    "A harness's image could not be built: build the sandbox image (scripts/build-image.sh), check podman, or set sandbox.harnessFiles: mount (podman).",
  HarnessWorkspaceMissing: "Materialize the task workspace before launching the harness.",
  HarnessTemplateInvalid: "Fix the Handlebars template in the harness's command, env, homeFiles or knobs.",
  HarnessHomeFileInvalid: 'Give homeFiles paths relative to HOME, such as ".codex/config.toml".',
  HarnessCommandEmpty: 'Give the command line as a list, e.g. [claude, -p, "--", "{{instruction}}"].',
  HarnessCrashedEarly:
    "The harness exited before its first model call; the end of its stderr is in the message, all of it in the run directory's harness-output/. Check its install and its env.",

  // ── runtime: rollouts ──
  RolloutTimeout: "The harness ran past the task's timeoutSeconds; raise it if the task needs more time.",
  EngineUnavailable: "The inference engine failed during the rollout; check the engine and its logs.",
  McpServerUnavailable:
    "An MCP server of the rollout did not start or answer MCP's initialize in its startupSeconds; the end of its stderr is in the message. Check its command and files (or raise startupSeconds). Retried as an infrastructure failure.",
  ToolNotAllowed:
    "The harness called an MCP tool outside the task's allow-list (its server's `tools`); reins refused it without forwarding it, and recorded the call.",
  McpServerCrashed:
    "An MCP server of the rollout exited while the harness ran; the end of its stderr is in the message. Retried as an infrastructure failure, never a reward of 0.",
  McpArgumentsTooLarge:
    "A tools/call's arguments were over the MCP server's maxArgumentBytes (default 1 MiB), or its request over 4 × that; reins refused it unforwarded, the harness got the refusal as the tool's result, and the record keeps the arguments cut with their size. Have the agent send less (a path, not the content), or raise the server's maxArgumentBytes.",
  McpResultTooLarge:
    "An MCP server's answer was over its maxResultBytes (default 4 MiB); reins did not read it, the harness got the refusal as the tool's result, and the record keeps its beginning and size. Ask the tool for less, or raise the server's maxResultBytes.",
  McpServerNotReading:
    "The MCP server has not read what was already sent to it (more than 8 × its maxArgumentBytes wait), so reins refused the call unforwarded. The server may be stopped or stuck; check it.",
  McpTooManyRequests:
    "The harness had too many MCP requests open at once to one server (32), or too many sessions (16); reins answered 429. Wait for answers before sending more, and reuse a session.",
  VerifierError: "The verifier could not score the workspace; the rollout's verifier details say why.",
  NoReward: "The rollout has no reward (its verifier failed); see its verifier error.",
  NothingScored:
    "No rollout of the evaluation got a reward; fix the first cause named (each rollout's error is in the run directory's rollouts.jsonl, its output under harness-output/), then run again.",
  InternalError: "This is a bug in reins; please report it with the output of the command run with REINS_DEBUG=1 (for a rollout: the run's events.jsonl).",

  // ── runtime: inference engines ──
  EngineUnreachable: "Check that the inference server is running and that the Model's endpoint points at it.",
  EngineFailed: "The inference engine failed; check its logs and the Model's engine settings.",
  EngineBadResponse: "The inference server answered in a form reins does not understand; check that it serves completions by token ids with logprobs.",
  EngineStreamCut: "The engine's token stream broke mid-completion; the rollout is retried as an infrastructure failure. Check the inference server's logs.",
  EngineNotTrainable:
    "Train through an engine that loads new weights: onnx (in process), vllm (serve, or a server started with VLLM_SERVER_DEV_MODE=1 on this machine) or sglang.",
  EngineServeConflict: "Give the vllm engine exactly one of baseUrl (a server you run) and serve (reins starts one for the command).",
  EngineServerFailed:
    "Read the server's log (vllm-server.log in the run directory): check that serve.python has vllm (bash scripts/install-python.sh), that serve.modelPath holds an HF-style model (config.json + safetensors) with a head_dim vLLM supports, or raise serve.startTimeoutSeconds on a slow machine.",
  EngineServeUnsupported:
    "engine.serve starts vLLM for reins eval and reins run only; for this command start the server yourself and give the engine's baseUrl.",
  EngineMismatch:
    "Point the engine's baseUrl at a server of the kind its type names (vllm, sglang or llama-cpp), or change the type to the server that runs there.",
  SamplingUnfaithful:
    "Train with sampling settings whose logprobs the engine returns (temperature 1 and topP 1 for raw logprobs), or run the server in a mode that returns the logprobs it samples from.",
  EngineLoadFailed: "Check the weights directory, or start a new run.",
  EngineReloadFailed: "Fix the cause (a full disk? a damaged file?), then resume with --resume DIR.",

  // ── runtime: the serving proxy's per-request limits (refused in the dialect's error shape, recorded in the call's error) ──
  RequestBodyTooLarge: "The request body is over the proxy's maxBodyBytes (before or after decompression); send a shorter conversation, or raise the limit.",
  RequestBodyTimeout: "The request body did not arrive within the proxy's bodyTimeoutMs; send the whole body at once.",
  RequestJsonTooComplex: "The request JSON nests too deeply or holds too many values (maxJsonDepth, maxJsonValues); send a plain conversation.",
  MessageTooLarge: "One message is longer than the proxy's maxMessageChars; shorten the message (a tool result, say) or compact the conversation.",
  ToolArgumentsTooLarge: "One tool call's arguments are longer than the proxy's maxToolArgumentChars; shorten them.",
  PromptTooLong: "The prompt's new text cannot fit in the model's context (checked on characters before tokenizing); compact the conversation.",
  ContextLengthExceeded: "The prompt has more tokens than the model's maxContextTokens allows; compact the conversation.",
  TooManyRequests: "The rollout has too many requests open at once (maxRequestsPerRollout); wait for answers before sending more.",
  // ── runtime: trainer worker ──
  TrainerStartFailed: "Check the trainer's python (with torch) and the model directory; the worker's stderr says more.",
  TrainerDied: "Read the worker's last stderr lines (trainer.log); after fixing the cause, resume from the last checkpoint.",
  TrainerUnreachable: "Check that the trainer worker is running and listening on its port.",
  TrainerRefused: "The trainer worker refused the request; its reason is in the message.",
  ProtocolMismatch: "Use a trainer worker and a client from the same reins version.",
  // the worker's own codes for a refused non-finite step (trainers/torch), surfaced as the run's code
  NonFiniteLoss: "The weights have probably diverged (learning rate too high?); lower it, or set onBadStep: {action: skip}.",
  NonFiniteBatch: "The batch holds a NaN or infinite value; check the rewards and the logprobs of the rollouts.",
  NonFiniteGradient: "The gradients are not finite; lower the learning rate, or set onBadStep: {action: skip}.",

  // ── runtime: the training loop ──
  NonFiniteMetrics: "The trainer accepted a step whose numbers are not finite; look at trainer.log in the run directory.",
  TooManyBadSteps: "Step after step was refused: lower the learning rate and start a new run, or raise onBadStep.maxSkips.",
  NoSftData: "No reference rollout passed its verifier; check the tasks' reference solutions with reins eval.",
  ReferenceToolInvalid:
    "Fix the harness's referenceTools so each template names only the reins tool's arguments (write_file: path, content; read_file: path; list_files: path, recursive; run_command: command).",

  // ── runtime: verifiers (a verifier error is not a reward) ──
  EmptyVerifier: "Add `checks`, a `script` or a `rubric` to the verifier.",
  UnknownCheckType: "Use a check type reins knows (see the Verifier schema).",
  CheckCrashed: "A check failed unexpectedly (a bug in reins); please report it with the check and the workspace.",
  ExecUnavailable: "Command checks need a workspace that can run commands (a sandbox).",
  CommandNotStarted: "Check the command of the check: it must exist in the sandbox.",
  HiddenFileUnavailable: "Check the verifier's hidden files: they must exist next to the spec.",
  HiddenFileInvalid: "Fix the hidden file so it parses.",
  InvalidPattern: "Fix the regular expression (JavaScript syntax).",
  InvalidQuery: "Use $, .key, ['key'], [0], [-1], [*] or .*, e.g. $.totals[0].amount.",
  InvalidSchema: "Fix the JSON Schema of the check.",
  ScriptNotStarted: "Check the verifier script's command: it must exist in the sandbox.",
  ScriptTimeout: "The verifier script ran too long; make it faster or raise its timeoutSeconds.",
  ScriptCrashed: "The verifier script failed; its stderr is in the message.",
  ScriptOutputInvalid: 'The verifier script must print one JSON object such as {"reward": 1} on stdout.',
  ScriptRewardInvalid: "The script's reward must be a number between 0 and 1.",
  JudgeUnavailable: "Give the Experiment or Evaluation a model, or name a judge for the rubric.",
  JudgeFailed: "The judge model's call failed; check its engine.",
  JudgeOutputInvalid: "The judge did not answer in the expected form; check the judge model and the rubric.",

  // ── runtime: trajectories inputs (rewards and algorithm files) ──
  RewardsNotJson: 'The rewards file is one JSON object: {"<rolloutId>": {"reward": 1, "task": "…", "harness": "…"}}.',
  RewardsNotObject: "The rewards file is one JSON object keyed by rollout id.",
  RewardsInvalidEntry: 'Each rollout maps to an object {"reward", "task", "harness"}.',
  RewardsInvalidField: "Give the field the type the message names.",
  RewardsMissingField: 'Each entry needs "reward", "task" and "harness".',
  RolloutNotFound: "Pick a rollout id the file holds (the table without --svg lists them).",
  PpoBatchUnsupported: "PPO batches need critic values from the trainer; write GRPO or RLOO batches with --out, or train PPO with reins run.",

  // ── cli: files the user names, ports ──
  OutputUnwritable: "Choose an output path in a directory you can write to.",
  OutputIsDirectory: "Give a file path, not a directory.",
  FileExists: "reins init never overwrites files: choose another name or --dir, or move the existing files away.",
  TasksDirNotFound: "Pass a directory that holds task families (subdirectories with a family.yaml).",
  PortUnavailable: "Choose another --port (0 picks a free one), or stop the program that uses it.",
  ViewRunNotFound: "Pass a run directory: the --out directory of reins run or reins eval (it holds plan.json, rollouts.jsonl, calls.jsonl).",
  ViewRemoteBind:
    "Serve on loopback (the default, 127.0.0.1) and reach it through a tunnel (ssh -L 8080:127.0.0.1:PORT HOST), or pass --allow-remote to let every machine that reaches the address read the runs.",
  ViewFileRefused:
    "reins view reads only regular files inside the run directory, each within its size limit: replace a link that leads out, a FIFO or a device with the file itself.",
  FileSystemError: "Check the path named in the message and its permissions.",
  SchemasStale: "Regenerate the JSON Schemas with reins schema --out DIR.",

  // ── runtime: call and rollout record files (src/runtime/records) ──
  CallRecordNotJson: "A call record file has one JSON object per line, as the proxy writes it (`reins proxy --record FILE`, a run's calls.jsonl).",
  CallRecordNotObject: "Each line must be one call record object.",
  CallRecordMissingField:
    "Each call record needs at least rolloutId, seq, promptIds, completionIds and completionLogprobs (src/runtime/records/call-record.ts).",
  CallRecordInvalidField: "Fix the field's value; records the proxy wrote are only wrong when the file was edited or cut.",
  CallRecordLogprobMismatch: "Each generated token needs exactly one rollout logprob.",
  CallRecordVersion: "This reins reads call records of versions 1 and 2; write the file with this version of reins.",
  CallRecordDuplicateSeq: "Each call of a rollout has its own seq; concatenated files must not repeat a rollout.",
  CallRecordsEmpty: "Point the command at a proxy record file (`calls.jsonl`).",
  RolloutRecordNotJson: "A rollout record file (a run's rollouts.jsonl) has one JSON object per line, as the run store writes it.",
  RolloutRecordNotObject: "Each line must be one rollout result object.",
  RolloutRecordMissingField: "Each rollout result needs at least id, step, task, harness, status, reward and passed (src/runtime/records/rollout-result.ts).",
  RolloutRecordInvalidField: "Fix the field's value; results the run store wrote are only wrong when the file was edited or cut.",

  // ── runtime: verification ──
  WorkspaceTooLarge:
    "The final workspace is past the copy limits for verification (200,000 entries, 2 GiB, 256 directory levels, paths of 3,072 characters), and the rollout is scored 0: what the agent made is the agent's. Have the task keep its outputs small.",

  // ── runtime: harness launch ──
  HarnessVariableUnset:
    "Set the variable in reins's environment before the run (a Harness's env and homeFiles read `${VAR}` when the harness starts), or give a default with ${VAR:-default}.",

  // ── runtime: reins run settings ──
  TrainerModeUnsupported:
    "reins run drives one trainer worker process on CPU (on this machine, or in the trainer Job's pod with mode: kubernetes, worker: cluster); the Kubernetes Job for GPU training is in the plan's manifests: `reins plan --json`.",
  WeightsFormatUnsupported:
    "Add the format the run's engine loads to the Trainer's weightsFormat: onnx for the in-process onnx engine (model.onnx), safetensors for a vllm or sglang server.",
  MetricsSinkUnavailable:
    "Install the metrics Python environment with `bash scripts/install-metrics-python.sh` (tensorboardX and wandb, pinned), or set REINS_METRICS_PYTHON to a Python that has them; or remove spec.metrics.",

  // ── runtime: reins synth ──
  OutDirNotEmpty: "Give another --out, or empty this one yourself: reins synth writes only into a new or empty directory.",
  TrainerJobFailed:
    "Check the cluster (KUBECONFIG), the namespace's quota and RBAC for jobs, services and persistentvolumeclaims, and that the claim can bind (a default StorageClass, or a PersistentVolume for it).",
  ProxyUnreachable:
    "Say how sandbox pods reach the proxy: sandbox.kubernetes.proxy.address (an IPv4 address of this machine pods can reach) when reins runs outside the cluster, or .service and .port when it runs inside, behind a Service.",
  HostedKeyMissing: "Export the key in the variable the hosted Model names (engine.apiKeyEnv; read when asking, never written), then run again.",
  GeneratorKeyMissing: "Export the key in the variable the generator names (generator.hosted.apiKeyEnv; it is read when asking, never written).",
  GeneratorRequestFailed: "Check the generator's baseUrl, model and key; the candidate is dropped by the generator gate and the synthesis goes on.",
  GeneratorAnswerInvalid: "The generator's API answered without text; check that baseUrl is the API the generator's `api` names.",
  NothingKept: "Every candidate was dropped: read each one's gate and reason in synth-report.json, then fix the generator's prompt or answers.",
  ReverifyFailed: "Fewer kept tasks passed again than reverify.minPassRate asks: the tasks are flaky (timing, randomness, network); see synth-report.json.",
} as const;

/** A permanent code of the catalogue. */
export type Code = keyof typeof CODES;
/** @deprecated the same as Code (diagnostics and problems share one catalogue). */
export type DiagnosticCode = Code;

export function isCode(value: string): value is Code {
  return Object.hasOwn(CODES, value);
}

/** The default hint of a code. */
export function hintOf(code: Code): string {
  return CODES[code];
}
