/**
 * mcpCall reads the MCP calls reins recorded while relaying (never the workspace): a call counts when
 * it named the tool (of the server, when given), succeeded, and its arguments hold the subset asked.
 */
import { describe, expect, it } from "vitest";
import type { ResolvedCheck } from "../../src/compiler/contract/plan.js";
import type { McpCallRecord } from "../../src/runtime/records/rollout-result.js";
import { CheckContext } from "../../src/runtime/verifiers/checks/context.js";
import { DirectoryReader } from "../../src/runtime/verifiers/directory-reader.js";
import { runChecks } from "../../src/runtime/verifiers/run-checks.js";
import { makeWorkspace } from "./fixture.js";

const call = (over: Partial<McpCallRecord>): McpCallRecord => ({
  server: "tickets",
  tool: "create_ticket",
  arguments: {},
  atMs: 10,
  latencyMs: 3,
  result: { content: [{ type: "text", text: "ok" }] },
  ...over,
});

const CALLS: McpCallRecord[] = [
  call({ arguments: { title: "Printer on fire", priority: "high", tags: ["hw"] } }),
  call({ tool: "update_ticket", arguments: { id: 1, status: "closed" }, result: { content: [], isError: true } }),
  call({ server: "search", tool: "search", arguments: { query: "refunds" } }),
  call({ tool: "delete_all", error: { code: "ToolNotAllowed", message: "not on the allow-list" } }),
];

async function judge(check: Record<string, unknown>, calls: readonly McpCallRecord[] | null = CALLS) {
  const ws = await makeWorkspace({ "note.txt": "x" });
  const part = await runChecks([{ type: "mcpCall", ...check } as ResolvedCheck], new CheckContext(new DirectoryReader(ws), calls ? { mcpCalls: calls } : {}));
  return part.results[0]!;
}

describe("mcpCall", () => {
  it("passes on a successful call of the tool whose arguments hold the subset", async () => {
    expect((await judge({ tool: "create_ticket" })).pass).toBe(true);
    expect((await judge({ server: "tickets", tool: "create_ticket", argumentsInclude: { title: "Printer on fire", priority: "high" } })).pass).toBe(true);
    expect((await judge({ tool: "search", argumentsInclude: { query: "refunds" } })).pass).toBe(true);
  });
  it("fails, saying why, on another server, other arguments, an error result or a refused call", async () => {
    expect((await judge({ server: "search", tool: "create_ticket" })).reason).toMatch(
      /search\/create_ticket was never called \(MCP calls made: tickets\/create_ticket, tickets\/update_ticket, search\/search, tickets\/delete_all\)/,
    );
    expect((await judge({ tool: "create_ticket", argumentsInclude: { priority: "low" } })).reason).toMatch(
      /called 1 time, but none succeeded with arguments including/,
    );
    expect((await judge({ tool: "update_ticket" })).reason).toMatch(/none succeeded \(1 answered with an error\)/);
    expect((await judge({ tool: "delete_all" })).pass).toBe(false);
  });
  it("present: false forbids a successful call; a refused one does not count", async () => {
    expect((await judge({ tool: "delete_all", present: false })).pass).toBe(true);
    const r = await judge({ tool: "create_ticket", present: false });
    expect([r.pass, r.reason]).toEqual([false, "create_ticket was called (1 time), which the task forbids."]);
  });
  it("a rollout without MCP servers made no call", async () => {
    expect((await judge({ tool: "create_ticket" }, null)).reason).toMatch(/the rollout had no MCP servers/);
    expect((await judge({ tool: "create_ticket", present: false }, null)).pass).toBe(true);
  });
});
