/**
 * `mcpServers` (Task, TaskFamily template, Harness, Experiment, Evaluation) → ResolvedMcpServer[]:
 * each server's files read like a task's, exactly one of `shipped` and `command`, names unique in
 * the list. And the plan's check that every task × harness pair can be given its servers: names
 * unique across the task's and the harness's, and a harness that knows how to be told of them.
 */
import { CODES } from "../contract/codes.js";
import { makeDiagnostic, type Diagnostic, type Result, type SourcePosition } from "../contract/diagnostics.js";
import type { ResolvedHarness, ResolvedMcpServer, ResolvedTask } from "../contract/plan.js";
import type { McpServerSpec } from "../schema/mcp.js";
import type { ProjectRoot } from "../source/project.js";
import { resolveWorkspace } from "./workspace.js";

export const DEFAULT_MCP_STARTUP_SECONDS = 20;

export interface McpServersContext {
  /** Absolute path of the spec file (for files' `from`). */
  specFile: string;
  roots?: readonly ProjectRoot[] | undefined;
  /** Position of a path under `mcpServers` (e.g. [0, "name"]). */
  positionOf: (path: (string | number)[]) => SourcePosition;
  notes?: string[];
}

export function resolveMcpServers(specs: readonly McpServerSpec[] | undefined, ctx: McpServersContext): Result<ResolvedMcpServer[]> {
  const diagnostics: Diagnostic[] = [];
  const out: ResolvedMcpServer[] = [];
  (specs ?? []).forEach((s, i) => {
    const first = (specs ?? []).findIndex((o) => o.name === s.name);
    if (first < i) {
      diagnostics.push(
        makeDiagnostic(
          "McpServerDuplicate",
          ctx.positionOf([i, "name"]),
          `Two MCP servers are named "${s.name}" (the first is mcpServers[${first}]); the harness would see one name for two servers.`,
          CODES.McpServerDuplicate,
          "error",
          ctx.notes,
        ),
      );
    }
    if ((s.shipped === undefined) === (s.command === undefined)) {
      const message =
        s.shipped === undefined
          ? `The MCP server "${s.name}" has neither \`shipped\` nor \`command\`: nothing to start.`
          : `The MCP server "${s.name}" has both \`shipped\` and \`command\`.`;
      diagnostics.push(
        makeDiagnostic(
          "McpServerCommandMissing",
          ctx.positionOf([i, s.shipped === undefined ? "name" : "command"]),
          message,
          CODES.McpServerCommandMissing,
          "error",
          ctx.notes,
        ),
      );
    }
    if (s.args !== undefined && s.shipped === undefined) {
      diagnostics.push(
        makeDiagnostic(
          "FieldHasNoEffect",
          ctx.positionOf([i, "args"]),
          `\`args\` does nothing for the MCP server "${s.name}": it is not a shipped server.`,
          "Put your server's arguments in its `command`.",
          "error",
          ctx.notes,
        ),
      );
    }
    const files = resolveWorkspace(s.files ? { files: s.files } : undefined, {
      specFile: ctx.specFile,
      ...(ctx.roots ? { roots: ctx.roots } : {}),
      positionOfFile: (f, field) => ctx.positionOf(field ? [i, "files", f, field] : [i, "files", f]),
      positionOfDir: () => ctx.positionOf([i, "files"]),
      ...(ctx.notes ? { notes: ctx.notes } : {}),
    });
    diagnostics.push(...files.diagnostics);
    out.push({
      name: s.name,
      where: s.where ?? "sandbox",
      ...(s.shipped !== undefined ? { shipped: s.shipped } : {}),
      command: s.shipped !== undefined ? [...(s.args ?? [])] : [...(s.command ?? [])],
      env: { ...(s.env ?? {}) },
      files: files.value,
      tools: s.tools ? [...s.tools] : null,
      startupSeconds: s.startupSeconds ?? DEFAULT_MCP_STARTUP_SECONDS,
      ...(s.maxArgumentBytes !== undefined ? { maxArgumentBytes: s.maxArgumentBytes } : {}),
      ...(s.maxResultBytes !== undefined ? { maxResultBytes: s.maxResultBytes } : {}),
    });
  });
  return { value: out, diagnostics };
}

/** The servers a rollout of `task` through `harness` gets: the task's (the plan's first), then the harness's. */
export function rolloutMcpServers(task: ResolvedTask, harness: ResolvedHarness): ResolvedMcpServer[] {
  return [...(task.mcpServers ?? []), ...(harness.mcpServers ?? [])];
}

/**
 * Whether every task × harness pair the plan runs can be given its servers. `at` points at the
 * harness's entry in the Experiment or Evaluation, where the fix is chosen.
 */
export function checkPairMcpServers(pairs: readonly { task: ResolvedTask; harness: ResolvedHarness; at: SourcePosition }[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  const seen = new Set<string>();
  for (const { task, harness, at } of pairs) {
    const servers = rolloutMcpServers(task, harness);
    if (servers.length === 0) continue;
    if ((!harness.mcp || !harness.dialect) && !seen.has(`mcp:${harness.name}`)) {
      seen.add(`mcp:${harness.name}`);
      const given = `The harness ${harness.name} would be given MCP servers (${servers.map((s) => s.name).join(", ")}, for task ${task.name})`;
      // MCP is relayed by the proxy, which only a harness that calls the model is given
      const why = !harness.mcp
        ? "its spec has no `mcp` section saying how to tell it about them"
        : "it calls no model (no `dialect`), so it is never given the proxy that relays them";
      out.push(makeDiagnostic("McpUnsupportedByHarness", at, `${given}, but ${why}.`, CODES.McpUnsupportedByHarness));
    }
    const names = servers.map((s) => s.name);
    const dup = names.find((n, i) => names.indexOf(n) < i);
    if (dup !== undefined && !seen.has(`dup:${harness.name}:${dup}`)) {
      seen.add(`dup:${harness.name}:${dup}`);
      out.push(
        makeDiagnostic(
          "McpServerDuplicate",
          at,
          `Task ${task.name} and the harness ${harness.name} both declare an MCP server named "${dup}"; a rollout's servers need distinct names.`,
          CODES.McpServerDuplicate,
        ),
      );
    }
  }
  return out;
}
