/**
 * `reins synth` keeps families whose tasks use MCP servers. Every candidate's tasks are paired with
 * the validation harness and with the do-nothing agent; the do-nothing agent had no `mcp` section
 * (and no dialect), so pairing it with a task that has MCP servers was McpUnsupportedByHarness and
 * every MCP family was dropped by the schema gate. It now declares both (it still does nothing):
 * an MCP family's reference is replayed through the validation harness with the task's servers,
 * the do-nothing agent fails it, and the family is kept and re-verified.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compileGates, NOP_HARNESS } from "../../src/runtime/synth/replays.js";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

/** A generator's answer: one TaskFamily whose task resolves a ticket through the shipped tickets server. */
const FAMILY = `apiVersion: reins/v1alpha1
kind: TaskFamily
metadata:
  name: resolve-ticket
spec:
  parameters:
    - {name: fixed, type: string}
    - {name: index, type: integer}
    - {name: problem, type: string}
  matrix:
    include:
      - {fixed: T-1, index: 0, problem: the slow login page}
  template:
    instruction: >-
      We fixed {{problem}}. Using the ticket tools, mark the ticket about it as done.
    mcpServers:
      - name: tickets
        shipped: tickets
        where: sandbox
        files:
          - path: tickets.json
            json:
              next: 3
              tickets:
                - {id: T-1, title: Login page takes 9 seconds, body: "", priority: high, status: open}
                - {id: T-2, title: March invoices missing, body: "", priority: urgent, status: open}
        tools: [list_tickets, update_ticket]
    verifier:
      checks:
        - jsonPath: {path: tickets.json, query: "$.tickets[{{index}}].status", equals: resolved}
        - jsonPath: {path: tickets.json, query: "$.tickets[{{index}}].id", equals: "{{fixed}}"}
        - mcpCall: {server: tickets, tool: update_ticket, argumentsInclude: {id: "{{fixed}}", status: resolved}}
    timeoutSeconds: 120
    reference:
      turns:
        - toolCalls: [{name: tickets__list_tickets, arguments: {}}]
        - toolCalls: [{name: tickets__update_ticket, arguments: {id: "{{fixed}}", status: resolved}}]
        - text: done
`;

const SYNTHESIS = `apiVersion: reins/v1alpha1
kind: Synthesis
metadata: {name: mcp-tasks}
spec:
  personas: [an on-call engineer]
  scenarios: [closing out an incident]
  skills: [update a ticket tracker through its tools]
  count: 1
  generator:
    scripted:
      answers: [answers/01-ticket.md]
  validation: {harness: reins-agent, attempts: 1, sandbox: {provider: local, concurrency: 2}}
`;

describe("reins synth with a family whose tasks use MCP", () => {
  it("the gates' Evaluation compiles: the do-nothing agent can be paired with a task that has MCP servers", () => {
    const dir = tempDir("reins-synth-mcp-gates-");
    writeFileSync(join(dir, "family.yaml"), FAMILY);
    const r = compileGates({ dir, families: ["resolve-ticket"], harness: "reins-agent", attempts: 1, sandbox: { provider: "local" }, adversaries: true }, [
      "family.yaml",
    ]);
    expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(r.plan!.tasks.map((t) => t.mcpServers?.map((s) => s.name))).toEqual([["tickets"]]);
    expect(r.plan!.harnesses.find((h) => h.name === NOP_HARNESS)?.mcp).toBeDefined();
  });

  it("keeps it: the reference passes through the validation harness with the task's servers, the do-nothing agent fails, the kept family verifies again", () => {
    const dir = tempDir("reins-synth-mcp-");
    mkdirSync(join(dir, "answers"));
    writeFileSync(join(dir, "answers", "01-ticket.md"), `One family, resolved through the tracker's tools.\n\n\`\`\`yaml\n${FAMILY}\`\`\`\n`);
    writeFileSync(join(dir, "synth.yaml"), SYNTHESIS);
    const out = join(dir, "out");
    const r = reins(["synth", join(dir, "synth.yaml"), "--out", out, "--json"], { timeout: 300_000 });
    const report = JSON.parse(readFileSync(join(out, "synth-report.json"), "utf8"));
    const gates = report.candidateReports[0].gates.map((g: { gate: string; passed: boolean; reason: string }) => [g.gate, g.passed, g.reason]);
    expect(r.code, `${r.stderr}\n${JSON.stringify(gates, null, 1)}`).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ candidates: 1, kept: 1, families: ["resolve-ticket"], reverify: { tasks: 1, passed: 1, ok: true } });
    expect(gates).toEqual(
      expect.arrayContaining([
        ["schema", true, "a valid TaskFamily of 1 task(s)"],
        ["reference", true, expect.stringContaining("passed 1/1")],
        ["do-nothing", true, expect.stringContaining("fails every task")],
      ]),
    );
    const kept = readFileSync(join(out, "resolve-ticket", "family.yaml"), "utf8");
    expect(kept).toContain("shipped: tickets");
    const v = reins(["validate", out, "--json"], { timeout: 60_000 });
    expect(v.code, v.stdout + v.stderr).toBe(0);
  }, 300_000);
});
