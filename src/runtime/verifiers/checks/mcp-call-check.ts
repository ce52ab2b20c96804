/**
 * mcpCall: whether the harness made (or did not make) an MCP tools/call — read from the record reins
 * kept while relaying MCP outside the sandbox, never from anything the agent wrote. A call counts
 * when it named the tool (of the server, when one is given), got an answer that is not an error
 * (neither a JSON-RPC error, a refusal, nor a result with isError), and its arguments hold every
 * `argumentsInclude` entry (a subset match: objects by key, other values by equality).
 * A call whose arguments the record keeps cut (over 64 KiB: long strings shortened, or only their
 * beginning) cannot be shown not to match: it counts as matching a forbidden call (`present:
 * false`), so an agent cannot hide a forbidden call behind padding.
 */
import type { ResolvedCheck } from "../../../compiler/contract/plan.js";
import type { McpCallRecord } from "../../records/rollout-result.js";
import { valuesEqual } from "../compare.js";
import { fail, pass, type CheckDefinition } from "./context.js";

interface McpCallCheck {
  server?: string;
  tool: string;
  present: boolean;
  argumentsInclude?: Record<string, unknown>;
}

function specOf(c: ResolvedCheck): McpCallCheck {
  return {
    tool: c.tool as string,
    present: c.present !== false,
    ...(typeof c.server === "string" ? { server: c.server } : {}),
    ...(c.argumentsInclude && typeof c.argumentsInclude === "object" ? { argumentsInclude: c.argumentsInclude as Record<string, unknown> } : {}),
  };
}

/** `want` holds within `got`: every key of an object recursively, other values equal. */
export function includes(got: unknown, want: unknown): boolean {
  if (want !== null && typeof want === "object" && !Array.isArray(want)) {
    if (got === null || typeof got !== "object" || Array.isArray(got)) return false;
    return Object.entries(want as Record<string, unknown>).every(([k, v]) => includes((got as Record<string, unknown>)[k], v));
  }
  return valuesEqual(got, want);
}

function succeeded(call: McpCallRecord): boolean {
  if (call.error) return false;
  const r = call.result as { isError?: unknown } | undefined;
  return !(r && typeof r === "object" && r.isError === true);
}

function name(s: McpCallCheck): string {
  return s.server ? `${s.server}/${s.tool}` : s.tool;
}

export const mcpCallCheck: CheckDefinition = {
  type: "mcpCall",
  label: (c) => {
    const s = specOf(c);
    return `mcpCall ${s.present ? "" : "not "}${name(s)}`;
  },
  async evaluate(c, ctx) {
    const s = specOf(c);
    const calls = ctx.options.mcpCalls;
    if (!calls)
      return s.present
        ? fail(`No MCP call was recorded: the rollout had no MCP servers, so ${name(s)} was never called.`)
        : pass("The rollout had no MCP servers.");
    const named = calls.filter((x) => x.tool === s.tool && (s.server === undefined || x.server === s.server));
    const matching = named.filter(
      (x) =>
        succeeded(x) && (s.argumentsInclude === undefined || includes(x.arguments, s.argumentsInclude) || (!s.present && x.truncated?.arguments !== undefined)),
    );
    const args = s.argumentsInclude ? ` with arguments including ${JSON.stringify(s.argumentsInclude)}` : "";
    if (s.present) {
      if (matching.length > 0) return pass(`${name(s)} was called${args} (${matching.length} of ${calls.length} MCP calls).`);
      if (named.length === 0)
        return fail(
          `${name(s)} was never called${calls.length ? ` (MCP calls made: ${[...new Set(calls.map((x) => `${x.server}/${x.tool}`))].join(", ")})` : " (no MCP call at all)"}.`,
        );
      const failed = named.filter((x) => !succeeded(x)).length;
      return fail(
        `${name(s)} was called ${named.length} time${named.length === 1 ? "" : "s"}, but none succeeded${args}${failed ? ` (${failed} answered with an error)` : ""}.`,
      );
    }
    return matching.length === 0
      ? pass(`${name(s)} was not called${args}.`)
      : fail(`${name(s)} was called${args} (${matching.length} time${matching.length === 1 ? "" : "s"}), which the task forbids.`);
  },
};
