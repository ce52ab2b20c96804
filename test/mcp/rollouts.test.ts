/**
 * MCP servers in real rollouts, through `reins eval` in local sandboxes:
 * - examples/mcp/evaluation.yaml: Claude Code, Codex, OpenClaw and reins-agent each search the runbooks and file a
 *   ticket through MCP (scripted policy), every attempt scores 1, and each rollout's record lists
 *   the calls reins relayed (server, tool, arguments, answer, latency);
 * - a harness that attacks its servers gets nothing outside its own rollout and its allow-list: a
 *   tool not allowed is refused (and recorded as ToolNotAllowed), no key or a forged one is refused,
 *   another rollout's servers are out of reach with its key, and each try's ticket store is fresh;
 * - a server that cannot start is an infrastructure failure with its reason, retried, never a 0.
 */
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { skipHarness, skipNote } from "../harness/scenario.js";
import { reins } from "../reins-cli.js";
import { createdJson } from "../control/helpers.js";
import { tempDir } from "../temp.js";

/** The report.json a rollout wrote. */
function reportOf(out: string, id: string): Record<string, unknown> {
  return createdJson(out, id, "report.json");
}

function reinsEval(file: string, out: string) {
  const r = reins(["eval", file, "--out", out, "--json", "--quiet"], { timeout: 900_000 });
  const rollouts = readFileSync(join(out, "rollouts.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  return { code: r.code, stderr: r.stderr, summary: r.stdout ? JSON.parse(r.stdout) : undefined, rollouts };
}

describe.skipIf(skipHarness("claude-code") || skipHarness("codex") || skipHarness("openclaw"))(`examples/mcp/evaluation.yaml${skipNote("claude-code")}`, () => {
  it("Claude Code, Codex, OpenClaw and reins-agent complete the MCP task; every record lists its MCP calls", () => {
    const run = reinsEval("examples/mcp/evaluation.yaml", join(tempDir("reins-mcp-example-"), "run"));
    expect(run.code, run.stderr).toBe(0);
    // each rollout's harness, status and reward first, so a failure says which and how
    const outcomes = run.rollouts.map((r) => `${r.harness} ${r.status} ${r.reward}${r.error ? ` ${r.error.code}` : ""}`).sort();
    expect(outcomes, JSON.stringify(run.rollouts.filter((r) => r.reward !== 1).map((r) => [r.id, r.harnessExit, r.verifier]))).toEqual(
      ["claude-code", "claude-code", "codex", "codex", "openclaw", "openclaw", "reins-agent", "reins-agent"].map((h) => `${h} ok 1`),
    );
    expect(run.summary).toMatchObject({ rollouts: 8, errors: 0, meanReward: 1 });
    expect(Object.keys(run.summary.harnesses).sort()).toEqual(["claude-code", "codex", "openclaw", "reins-agent"]);
    // Codex sends a namespaced call back split (namespace mcp__search, name search); every harness's prompts still extend
    for (const h of ["claude-code", "codex", "openclaw", "reins-agent"])
      expect(run.summary.fidelity.byHarness[h], h).toMatchObject({ prefixBreaks: 0, mismatchedTrainedTokens: 0 });
    for (const r of run.rollouts) {
      expect([r.status, r.reward, r.tries], JSON.stringify(r.error ?? r.verifier)).toEqual(["ok", 1, 1]);
      expect(r.mcp.servers.map((s: { name: string; where: string; tools: string[] }) => [s.name, s.where, s.tools])).toEqual([
        ["search", "beside", ["search", "fetch"]],
        ["tickets", "beside", ["create_ticket", "list_tickets", "get_ticket"]],
      ]);
      expect(r.mcp.calls.map((c: { server: string; tool: string; arguments: unknown }) => [c.server, c.tool, c.arguments])).toEqual([
        ["search", "search", { query: "billing service owner" }],
        ["tickets", "create_ticket", { title: "Billing outage", priority: "urgent" }],
      ]);
      const [search, ticket] = r.mcp.calls;
      expect(JSON.stringify(search.result)).toContain("billing.md");
      expect(JSON.stringify(ticket.result)).toContain("T-1");
      for (const c of r.mcp.calls) expect(c.latencyMs).toBeGreaterThanOrEqual(0);
    }
  }, 900_000);
});

describe("a harness attacking its MCP servers, and a server that cannot start", () => {
  let run: ReturnType<typeof reinsEval>;
  let out: string;
  beforeAll(() => {
    const dir = tempDir("reins-mcp-hostile-");
    out = join(dir, "run");
    copyFileSync(resolve("test/mcp/hostile-client.mjs"), join(dir, "hostile-client.mjs"));
    writeFileSync(
      join(dir, "eval.yaml"),
      `apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: hostile}
spec:
  dialect: openai-chat
  command: [node, ${join(dir, "hostile-client.mjs")}]
  mounts: [{path: hostile-client.mjs, sandboxPath: ${join(dir, "hostile-client.mjs")}}]
  mcp: {env: {MCP_SERVERS: "{{json mcpServers}}", MCP_KEY: "{{apiKey}}"}}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: tickets}
spec:
  instruction: File a ticket
  mcpServers: [{name: tickets, shipped: tickets, tools: [create_ticket]}]
  verifier:
    checks:
      - fileExists: report.json
      - mcpCall: {tool: create_ticket, argumentsInclude: {title: Printer on fire}}
      - mcpCall: {tool: update_ticket, present: false}
  timeoutSeconds: 120
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: broken-server}
spec:
  instruction: Anything
  mcpServers: [{name: broken, command: [sh, -c, "echo the database is gone >&2; exit 3"]}]
  verifier: {checks: [{fileExists: report.json}]}
  timeoutSeconds: 120
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: hostile}
spec:
  model: {name: qwen3}
  tasks: [{name: tickets}, {name: broken-server}]
  harnesses: [{name: hostile}]
  attempts: 2
  sandbox: {provider: local, concurrency: 2}
`,
    );
    run = reinsEval(join(dir, "eval.yaml"), out);
  }, 900_000);

  it("refuses what is outside the rollout and its allow-list, and records the refusal", () => {
    const tickets = run.rollouts.filter((r) => r.task === "tickets");
    expect(
      tickets.map((r) => [r.status, r.reward]),
      JSON.stringify(tickets.map((r) => [r.error, r.retries])),
    ).toEqual([
      ["ok", 1],
      ["ok", 1],
    ]);
    for (const r of tickets) {
      expect(r.mcp.calls.map((c: { tool: string; error?: { code: string } }) => [c.tool, c.error?.code ?? "ok"])).toEqual([
        ["update_ticket", "ToolNotAllowed"],
        ["create_ticket", "ok"],
      ]);
      const report = reportOf(out, r.id);
      expect([report.noKey, report.forgedKey, report.unknownServer, report.otherRollout], JSON.stringify(report)).toEqual([401, 401, 404, 401]);
      expect(JSON.stringify(report.listed)).not.toContain("update_ticket");
      expect(JSON.stringify(report.refused)).toContain("not allowed");
      // Each try's store is fresh: the first ticket of every rollout is T-1.
      expect(JSON.stringify(r.mcp.calls[1].result)).toContain('\\"id\\": \\"T-1\\"');
    }
  });

  it("a server that cannot start fails the try as McpServerUnavailable with its stderr, retried, without a reward", () => {
    const broken = run.rollouts.filter((r) => r.task === "broken-server");
    expect(broken.map((r) => [r.status, r.reward])).toEqual([
      ["infra-failed", null],
      ["infra-failed", null],
    ]);
    for (const r of broken) {
      expect(r.tries).toBeGreaterThan(1);
      expect(r.error.code).toBe("McpServerUnavailable");
      expect(r.error.message).toContain("the database is gone");
    }
    expect(run.summary).toMatchObject({ rollouts: 4, errors: 2, meanReward: 1 });
  });
});
