/** One file given to a workspace (a task's, its hidden files', an MCP server's). */
import { z } from "zod";

const FilePath = z.string().min(1).max(4096).describe("Relative path inside the workspace (no leading '/', no '..').");

export const WorkspaceFileSpec = z
  .strictObject({
    path: FilePath,
    content: z.string().optional().describe("UTF-8 text content."),
    base64: z.string().optional().describe("Binary content, base64-encoded."),
    from: z.string().optional().describe("Copy from this file, relative to the spec file and inside the project (a regular file of at most 16 MiB)."),
    json: z.unknown().optional().describe("Any value, written as pretty JSON."),
    yaml: z.unknown().optional().describe("Any value, written as YAML."),
    executable: z.boolean().optional().describe("Mark the file executable (mode 0755)."),
  })
  .describe("One workspace file: exactly one of content, base64, from, json, yaml.");
