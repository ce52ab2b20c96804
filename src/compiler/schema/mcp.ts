/**
 * MCP servers of a rollout (`mcpServers` on a Task, a TaskFamily's template, a Harness, an Experiment
 * or an Evaluation) and how a harness is told about them (a Harness's `mcp`). Every server is a stdio
 * MCP server that reins starts fresh for each try and stops with it; the harness reaches it over
 * streamable HTTP through the proxy, and reins records every tool call in between.
 */
import { z } from "zod";
import { WorkspaceFileSpec } from "./workspace-file.js";

/** The MCP servers shipped with reins (src/runtime/mcp/servers/<name>.mjs). */
export const SHIPPED_MCP_SERVERS = ["web-search", "tickets"] as const;

export const McpServerNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,31}$/, "a lowercase name of at most 32 characters: letters, digits, '-' and '_', starting with a letter")
  .describe("The server's name: the harness sees its tools under it (Claude Code: mcp__<name>__<tool>).");

export const McpServerSpecSchema = z
  .strictObject({
    name: McpServerNameSchema,
    shipped: z
      .enum(SHIPPED_MCP_SERVERS)
      .optional()
      .describe(
        "A server shipped with reins: web-search (search and fetch over a corpus file, --corpus PATH) or tickets (a ticket store kept in tickets.json). Run with reins's node; `args` are its arguments.",
      ),
    args: z.array(z.string()).optional().describe("Arguments of a shipped server."),
    command: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe("argv of your own stdio MCP server, run in the server's workspace (node is on PATH; its files come from `files`)."),
    where: z
      .enum(["sandbox", "beside"])
      .optional()
      .describe(
        "sandbox (default): inside the rollout's own sandbox, where it sees the agent's workspace. beside: in a sandbox of its own (no network), which the agent reaches only through MCP, so its state cannot be edited behind the tools' back.",
      ),
    env: z.record(z.string(), z.string()).optional().describe("The server's environment (nothing else of reins's environment reaches it)."),
    files: z
      .array(WorkspaceFileSpec)
      .optional()
      .describe("Files written into the server's workspace before it starts (for `where: sandbox`, the rollout's workspace)."),
    tools: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        "The tools the harness may see and call; others are hidden from tools/list and refused (recorded as ToolNotAllowed). Default: all the server lists.",
      ),
    startupSeconds: z
      .number()
      .positive()
      .max(600)
      .optional()
      .describe("Seconds the server may take to answer MCP's initialize (default 20); past it the try is an infrastructure failure, retried."),
    maxArgumentBytes: z
      .number()
      .int()
      .positive()
      .max(64 * 1024 * 1024)
      .optional()
      .describe(
        "The largest arguments of one tools/call, as JSON in UTF-8 bytes (default 1 MiB); a larger call is refused unforwarded and the harness gets McpArgumentsTooLarge as the tool's result.",
      ),
    maxResultBytes: z
      .number()
      .int()
      .positive()
      .max(256 * 1024 * 1024)
      .optional()
      .describe(
        "The largest message the server may write, one JSON line in bytes (default 4 MiB); a larger answer is not read, and the harness gets McpResultTooLarge as the tool's result.",
      ),
  })
  .describe("One stdio MCP server, fresh for every try of every rollout: exactly one of `shipped` and `command`.");

export const McpServersSchema = z
  .array(McpServerSpecSchema)
  .optional()
  .describe("MCP servers every rollout of it gets (started by reins per try, relayed and recorded).");

export const HarnessMcpSpecSchema = z
  .strictObject({
    args: z
      .array(z.string())
      .optional()
      .describe(
        "argv added when the rollout has MCP servers (before the command's \"--\", if it has one, else at its end); templates like the command's plus {{mcpServers}} (a list of {name, url, tools}).",
      ),
    env: z.record(z.string(), z.string()).optional().describe("Environment set when the rollout has MCP servers; templated likewise."),
    homeFiles: z
      .array(z.strictObject({ path: z.string().min(1), content: z.string() }))
      .optional()
      .describe("Config files written into HOME when the rollout has MCP servers; templated likewise (e.g. {{#each mcpServers}}…{{/each}})."),
    toolName: z
      .string()
      .regex(
        /^(?=.*\{\{server\}\})(?=.*\{\{tool\}\})(?:[A-Za-z0-9_.-]|\{\{server\}\}|\{\{tool\}\})+$/,
        "a name made of {{server}}, {{tool}} and letters, digits, '_', '-' or '.', with both {{server}} and {{tool}}",
      )
      .optional()
      .describe(
        "The name the model calls tool {{tool}} of server {{server}} by in this harness (default {{server}}__{{tool}}; Claude Code: mcp__{{server}}__{{tool}}). A reference solution's call of <server>__<tool> is renamed to it when replayed through the harness.",
      ),
  })
  .describe(
    "How this harness is told about a rollout's MCP servers (each at {{url}}, authenticated with the rollout's key {{apiKey}}). A harness without it cannot be given MCP servers.",
  );

export type McpServerSpec = z.input<typeof McpServerSpecSchema>;
