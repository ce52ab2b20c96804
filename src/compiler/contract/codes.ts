/**
 * The diagnostic catalogue. Codes are permanent: never rename one once shipped.
 * Each entry: a default hint (what to do). Messages are built where the problem is found.
 */
export const CODES = {
  // source
  FileNotFound: "Check the path; relative paths are resolved from the current directory (or from the file that references them).",
  FileUnreadable: "Check the file's permissions.",
  FileTooLarge: "Spec files are limited in size; move large data into workspace directories referenced with `fromDir`.",
  BinaryFile: "This does not look like a YAML text file. Pass only .yaml/.yml spec files or directories containing them.",
  NoSpecFiles: "Pass at least one .yaml/.yml file or a directory containing some.",
  YamlSyntax: "Fix the YAML syntax at this position.",
  DuplicateKey: "Remove or rename one of the duplicated keys.",
  AliasBomb: "YAML aliases expand too much here. Write the values out instead of nesting aliases.",
  TooDeep: "The document nests too deeply. Flatten the structure.",
  EmptyDocument: "Remove the empty document or give it content.",
  UndefinedVariable: "Set the environment variable, or give a default with ${VAR:-default}.",
  // schema
  MissingApiVersion: "Add `apiVersion: reins/v1alpha1` to the document.",
  UnsupportedApiVersion: "Use `apiVersion: reins/v1alpha1`.",
  MissingKind: "Add a `kind:` (Task, TaskFamily, Harness, Verifier, Model, Algorithm, Sandbox, Trainer, Experiment, Evaluation).",
  UnknownKind: "Use one of the kinds reins knows.",
  UnknownField: "Remove the field or fix its spelling.",
  InvalidType: "Change the value to the expected type.",
  InvalidValue: "Use one of the allowed values.",
  MissingField: "Add the required field.",
  InvalidName: "Names are lowercase letters, digits and '-', starting with a letter or digit (at most 63 characters).",
  // resolve
  DuplicateName: "Rename one of them: names are unique per kind.",
  UnknownReference: "Define a document with that kind and name, or fix the name.",
  PathEscape: "Workspace paths are relative and stay inside the workspace: no leading '/', no '..' segments.",
  DuplicateWorkspacePath: "Each workspace path may appear once per task.",
  WorkspaceDirNotFound: "Check the `fromDir` path; it is resolved from the file that contains it.",
  TemplateSyntax: "Fix the Handlebars syntax in the template.",
  TemplateUnknownParameter: "Declare the parameter in `parameters` or in the matrix, or fix its name.",
  TemplateUnknownHelper: "Use one of the built-in helpers: upper, lower, slug, json, add, sub, mul, div, mod, pad, eq, ne, lt, gt, and, or, not, join, default, indent, repeat, range, pick.",
  TemplateRender: "Fix the template or the parameter values.",
  MatrixEmpty: "The matrix expands to no cells: check `exclude`, or add axes/`include` entries.",
  MatrixTooLarge: "Reduce the matrix or the generate count.",
  InvalidParameter: "Give the parameter a value of its declared type.",
  MissingParameter: "Give the parameter a value in the matrix, `include`, `generate`, or a default.",
  InvalidCheck: "Fix the check.",
  NoPlanTarget: "Add an Experiment or Evaluation document.",
  AmbiguousPlanTarget: "Choose one with --target NAME.",
  // semantic
  GroupSizeTooSmall: "GRPO normalizes rewards within a group; use groupSize 2 or more.",
  UnsupportedDialect: "Use one of the dialects the proxy speaks: anthropic-messages, openai-chat, openai-responses.",
  ModelRequired: "Harnesses that call a model need a `model` in the Experiment or Evaluation.",
  NoTasksSelected: "Select at least one task: by name, by family, or by labels.",
  NoHarnesses: "List at least one harness.",
  InvalidWeight: "Weights are positive numbers.",
  HeldOutOverlap: "Keep held-out tasks out of the training selection, e.g. with a split label.",
  // proxy / model runtime
  ProxyModelMissing: "Put exactly one Model document in the proxy config.",
  ProxyModelAmbiguous: "Keep one Model document in the proxy config, or name one.",
  TokenizerNotFound: "Check the tokenizer path; it is resolved from the Model's file.",
  TokenizerInvalid: "Use a Hugging Face tokenizer.json.",
  ChatTemplateMissing: "Give chatTemplate or chatTemplateFile, or use a tokenizer that ships one.",
  ChatTemplateInvalid: "Fix the Jinja chat template.",
  ChatTemplateNotSegmentable: "The chat template must render each message as its own contiguous segment.",
  StopTokenUnknown: "Use stop tokens that exist in the tokenizer's vocabulary.",
  DuplicateDocument: "The same file was given twice; it is read once.",
  // plan files and run directories (the reviewed plan is what runs)
  InvalidPlan: "Pass a plan file written by `reins plan --out`.",
  PlanEdited: "A plan file runs only as `reins plan` wrote it: plan the specs again (`reins plan SPECS --out plan.json`) and review that file.",
  PlanChanged: "Resume with the specs (or plan file) the run started from, or start a new run with --out.",
} as const;

export type DiagnosticCode = keyof typeof CODES;
