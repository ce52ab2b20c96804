/** Task: an instruction, a workspace, a verifier, a timeout. */
import { z } from "zod";
import { Name, PositiveInt, documentSchema } from "./common.js";
import { VerifierSpecSchema } from "./verifier.js";
import { ScriptedTurnSpec } from "./model.js";
import { McpServersSchema } from "./mcp.js";
import { WorkspaceFileSpec } from "./workspace-file.js";

export { WorkspaceFileSpec };

export const WorkspaceSpec = z
  .strictObject({
    files: z.array(WorkspaceFileSpec).optional(),
    fromDir: z
      .string()
      .optional()
      .describe(
        "Copy every regular file under this directory (relative to the spec file and inside the project; symlinks are not followed; at most 10,000 files and 64 MiB).",
      ),
  })
  .describe("Files the harness starts with.");

export const VerifierRefOrInline = z.union([z.strictObject({ ref: Name.describe("Name of a Verifier document.") }), VerifierSpecSchema]);

export const TaskSpecSchema = z
  .strictObject({
    instruction: z.string().min(1).describe("What the agent is asked to do."),
    category: z.string().optional().describe("Category for reports (defaults to the `category` label)."),
    workspace: WorkspaceSpec.optional(),
    hidden: WorkspaceSpec.optional().describe("Files only the verifier sees (expected outputs, checkers)."),
    verifier: VerifierRefOrInline.describe("How the final workspace is scored."),
    timeoutSeconds: PositiveInt.max(86400)
      .optional()
      .describe("Wall-clock limit for the whole rollout, sandbox creation included (default: the Sandbox's timeoutSeconds, itself 600 by default)."),
    reference: z
      .strictObject({
        turns: z.array(ScriptedTurnSpec).min(1).describe("The model turns of a correct solution, in order."),
      })
      .optional()
      .describe("A reference solution as model turns: replayed through a harness to make SFT trajectories."),
    mcpServers: McpServersSchema,
  })
  .describe("A task: instruction, workspace, verifier.");

export const TaskDocument = documentSchema("Task", TaskSpecSchema, "A Task: one instruction over one workspace, scored by a verifier.");

export type TaskSpec = z.input<typeof TaskSpecSchema>;
export type WorkspaceFile = z.input<typeof WorkspaceFileSpec>;
