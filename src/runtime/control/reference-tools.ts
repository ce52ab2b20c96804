/**
 * Reference solutions are written once, with reins's workspace tools (write_file, read_file,
 * list_files, run_command); each harness spec's `referenceTools` says what those calls are in its
 * own tool set (Claude Code's Write {file_path, content}, a shell command for Codex). This maps a
 * task's reference turns to one harness's before they are replayed through it. Pure.
 */
import Handlebars from "handlebars";
import type { ReferenceTool, ResolvedHarness, ScriptedTurn } from "../../compiler/contract/plan.js";

const handlebars = Handlebars.create();
handlebars.registerHelper("json", (value: unknown) => JSON.stringify(value));
/** POSIX single-quoting: the value as one shell word, whatever it holds. */
handlebars.registerHelper("shell", (value: unknown) => `'${String(value).replace(/'/g, `'\\''`)}'`);

/** A template that is exactly one `{{arg}}` keeps the argument's own type (a number stays a number). */
const WHOLE = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/;

export class ReferenceToolError extends Error {}

function render(template: string, args: Record<string, unknown>, where: string): unknown {
  const whole = WHOLE.exec(template);
  if (whole) {
    if (!(whole[1]! in args)) throw new ReferenceToolError(`${where}: the reference call has no argument "${whole[1]}"`);
    return args[whole[1]!];
  }
  try {
    return handlebars.compile(template, { strict: true, noEscape: true })(args);
  } catch (e) {
    throw new ReferenceToolError(`${where}: ${(e as Error).message.split("\n")[0]}`);
  }
}

function mapCall(call: { name: string; arguments: Record<string, unknown> | string }, tool: ReferenceTool, where: string) {
  const args = typeof call.arguments === "string" ? (JSON.parse(call.arguments) as Record<string, unknown>) : call.arguments;
  const out: Record<string, unknown> = {};
  for (const [key, template] of Object.entries(tool.arguments)) {
    out[key] = Array.isArray(template) ? template.map((t, i) => String(render(t, args, `${where}.${key}[${i}]`))) : render(template, args, `${where}.${key}`);
  }
  return { name: tool.name, arguments: out };
}

/**
 * The name this harness's model calls an MCP tool by, for a reference call named
 * `<server>__<tool>` of one of the rollout's servers (the longest server name that fits); undefined
 * for any other call.
 */
function mcpToolName(name: string, servers: readonly string[], harness: Pick<ResolvedHarness, "mcp">): string | undefined {
  const server = [...servers].sort((a, b) => b.length - a.length).find((s) => name.startsWith(`${s}__`) && name.length > s.length + 2);
  if (server === undefined) return undefined;
  const template = harness.mcp?.toolName ?? "{{server}}__{{tool}}";
  return template.replaceAll("{{server}}", server).replaceAll("{{tool}}", name.slice(server.length + 2));
}

/**
 * The turns as this harness's model would say them. Calls of a reins tool the harness maps are
 * rewritten, and calls of an MCP tool written `<server>__<tool>` (a server of `mcpServers`, the
 * rollout's) take the harness's MCP tool name; any other call (already in the harness's own
 * tools) is kept as written. Throws ReferenceToolError when a mapping does not render for a call.
 */
export function referenceTurnsFor(
  turns: readonly ScriptedTurn[],
  harness: Pick<ResolvedHarness, "name" | "referenceTools" | "mcp">,
  mcpServers: readonly string[] = [],
): ScriptedTurn[] {
  const tools = harness.referenceTools ?? {};
  return turns.map((turn, i) => {
    if (!turn.toolCalls) return { ...turn };
    return {
      ...turn,
      toolCalls: turn.toolCalls.map((call, j) => {
        const tool = tools[call.name as keyof typeof tools];
        if (tool) return mapCall(call, tool, `harness ${harness.name} referenceTools.${call.name} (turn ${i + 1}, call ${j + 1})`);
        const mcpName = mcpToolName(call.name, mcpServers, harness);
        return mcpName === undefined ? call : { ...call, name: mcpName };
      }),
    };
  });
}
