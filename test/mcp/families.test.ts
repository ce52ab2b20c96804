/**
 * The starter MCP task families (examples/mcp/families.yaml): rendered per task with their servers
 * and reference solutions (and `reins render`'s output renders to the same tasks again); the
 * references' MCP calls, written <server>__<tool>, take each harness's own tool name; replayed
 * through Claude Code, Codex, OpenClaw and reins-agent (as SFT does) every one scores 1; and an agent
 * that edits the ticket store behind the tools' back does not.
 */
import { cpSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import type { ScriptedTurn } from "../../src/compiler/contract/plan.js";
import { ReferenceEngine } from "../../src/runtime/control/reference-engine.js";
import { referenceTurnsFor } from "../../src/runtime/control/reference-tools.js";
import { sftRollouts } from "../../src/runtime/control/sft.js";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import type { VerifierResult } from "../../src/runtime/verifiers/verify.js";
import { runPlan } from "../executor/helpers.js";
import { loadHarnessSpec } from "../harness/harness-spec.js";
import { skipHarness, skipNote } from "../harness/scenario.js";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const FAMILIES = "examples/mcp/families.yaml";

function render(file: string): { name: string; labels: Record<string, string>; params: Record<string, string>; spec: any }[] {
  const r = reins(["render", file, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).documents.map((d: any) => ({
    name: d.metadata.name,
    labels: d.metadata.labels,
    params: JSON.parse(d.metadata.annotations["reins.dev/parameters"]),
    spec: d.spec,
  }));
}

/** A copy of the families and their runbooks in a fresh directory, with `extra` YAML beside them. */
function project(extra: string): string {
  const dir = tempDir("reins-mcp-families-");
  cpSync(resolve("examples/mcp/families.yaml"), join(dir, "families.yaml"));
  cpSync(resolve("examples/mcp/runbooks"), join(dir, "runbooks"), { recursive: true });
  writeFileSync(join(dir, "spec.yaml"), extra);
  return join(dir, "spec.yaml");
}

const MODEL = `apiVersion: reins/v1alpha1
kind: Model
metadata: {name: scripted-q}
spec:
  tokenizer: {type: qwen3}
  toolCallFormat: qwen3
  reasoning: {start: "<think>", end: "</think>"}
  stopTokens: ["<|im_end|>"]
  sampling: {temperature: 1, topP: 1, maxTokens: 2048}
  engine: {type: scripted, script: [{text: done}]}
`;

describe("the starter MCP families", () => {
  it("render each task with its servers, checks and reference; the rendered tasks render the same again", () => {
    const docs = render(FAMILIES);
    const owner = docs.filter((d) => d.labels["reins.dev/family"] === "runbook-owner");
    const tickets = docs.filter((d) => d.labels["reins.dev/family"] === "ticket-triage");
    expect([owner.length, tickets.length]).toEqual([8, 4]);
    for (const d of owner) {
      const [search] = d.spec.mcpServers;
      expect([search.name, search.shipped, search.where, search.args, search.tools]).toEqual([
        "search",
        "web-search",
        "beside",
        ["runbooks"],
        ["search", "fetch"],
      ]);
      expect(search.files).toHaveLength(8);
      const { service, owner: team } = d.params;
      expect(d.spec.instruction).toContain(`owns the ${service} service`);
      expect(d.spec.verifier.checks[0].fileEquals.content).toBe(team);
      expect(search.files.find((f: { path: string }) => f.path === `runbooks/${service}.md`).content).toContain(`Owner: the ${team} team`);
      expect(d.spec.reference.turns[0].toolCalls[0]).toEqual({ name: "search__search", arguments: { query: `${service} service owner` } });
    }
    const t1 = tickets.find((d) => d.spec.instruction.includes("Add a login latency alert"))!;
    expect(t1.spec.verifier.checks.map((c: any) => c.mcpCall?.argumentsInclude ?? c.jsonPath.query)).toEqual([
      "$.tickets[0].status",
      "$.tickets[3].title",
      "$.tickets[3].priority",
      "$.tickets",
      { id: "T-1", status: "resolved" },
      { title: "Add a login latency alert", priority: "high" },
    ]);
    expect(JSON.parse(t1.spec.mcpServers[0].files[0].content).tickets.map((t: { id: string }) => t.id)).toEqual(["T-1", "T-2", "T-3"]);

    const dir = tempDir("reins-mcp-render-");
    const r = reins(["render", FAMILIES]);
    writeFileSync(join(dir, "rendered.yaml"), r.stdout);
    expect(render(join(dir, "rendered.yaml"))).toEqual(docs);
  }, 300_000);

  it("a reference's <server>__<tool> call takes each harness's MCP tool name; other calls map as before", () => {
    const turns: ScriptedTurn[] = [
      { toolCalls: [{ name: "search__search", arguments: { query: "billing" } }] },
      { toolCalls: [{ name: "write_file", arguments: { path: "owner.txt", content: "x" } }] },
      { toolCalls: [{ name: "nosuch__search", arguments: {} }] },
    ];
    const names = (h: string) => referenceTurnsFor(turns, loadHarnessSpec(h), ["search", "tickets"]).map((t) => t.toolCalls![0]!.name);
    expect(names("claude-code")).toEqual(["mcp__search__search", "Write", "nosuch__search"]);
    expect(names("codex")).toEqual(["mcp__search__search", "exec_command", "nosuch__search"]);
    expect(names("openclaw")).toEqual(["search__search", "write", "nosuch__search"]);
    expect(names("reins-agent")).toEqual(["search__search", "write_file", "nosuch__search"]);
    // without the rollout's servers the call is not an MCP call
    expect(referenceTurnsFor(turns, loadHarnessSpec("claude-code"))[0]!.toolCalls![0]!.name).toBe("search__search");
  }, 60_000);

  const real = ["claude-code", "codex", "openclaw"];
  describe.skipIf(real.some(skipHarness))(`reference replays through the harnesses${skipNote("claude-code")}`, () => {
    it("every harness's replay of both families scores 1, each MCP call recorded", async () => {
      const file = project(`apiVersion: reins/v1alpha1
kind: Experiment
metadata: {name: mcp-refs}
spec:
  imports: [families.yaml]
  model: {name: scripted-q}
  tasks:
    - labels: {reins.dev/family: runbook-owner, split: train}
    - labels: {reins.dev/family: ticket-triage, split: train}
  harnesses:
    - {name: claude-code, sftReferences: 3}
    - {name: codex, sftReferences: 3}
    - {name: openclaw, sftReferences: 2, tools: [write]}
    - {name: reins-agent, sftReferences: 3}
  algorithm: {type: GRPO, groupSize: 2}
  sft: {steps: 1, learningRate: 1e-3, batchSize: 4}
  sandbox: {provider: local, concurrency: 3}
  trainer: {name: torch-cpu}
  steps: 1
  seed: 7
---
${MODEL}`);
      const compiled = compilePlan([file], { env: {} });
      if (!compiled.value) throw new Error(JSON.stringify(compiled.diagnostics));
      const plan = compiled.value;
      const { rollouts, scriptOf } = sftRollouts(plan);
      expect(rollouts).toHaveLength(11);
      const model = plan.model!;
      const engine = new ReferenceEngine({ model, runtime: await loadModelRuntime(model) }, (id) => scriptOf.get(id));
      const { results } = await runPlanOf(plan, rollouts, engine);
      const familyOf = (task: string) => plan.tasks.find((t) => t.name === task)!.provenance!.family;
      expect(new Set(results.map((r) => familyOf(r.task)))).toEqual(new Set(["runbook-owner", "ticket-triage"]));
      for (const r of results) {
        expect([r.harness, r.status, r.reward], JSON.stringify(r.error ?? r.verifier)).toEqual([r.harness, "ok", 1]);
        const tools = r.mcp!.calls.map((c) => `${c.server}.${c.tool}`);
        expect(tools).toEqual(
          familyOf(r.task) === "runbook-owner" ? ["search.search"] : ["tickets.list_tickets", "tickets.update_ticket", "tickets.create_ticket"],
        );
      }
    }, 900_000);
  });

  it("an agent that edits tickets.json instead of calling the tools does not pass", async () => {
    // A command harness that writes the final store the task asks for, never touching the tools.
    const forge = `const fs=require("fs");const s=JSON.parse(fs.readFileSync("tickets.json","utf8"));s.tickets[0].status="resolved";s.tickets.push({id:"T-4",title:"Add a login latency alert",body:"",priority:"high",status:"open"});s.next=5;fs.writeFileSync("tickets.json",JSON.stringify(s));`;
    const file = project(`apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: forge}
spec:
  imports: [families.yaml]
  tasks: [{labels: {reins.dev/family: ticket-triage, split: train}}]
  model: {name: qwen3}
  harnesses: [{name: forger}]
  sandbox: {provider: local, concurrency: 3}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: forger}
spec:
  dialect: openai-chat
  command: [node, -e, ${JSON.stringify(forge)}]
  mcp: {}
`);
    const compiled = compilePlan([file], { env: {} });
    if (!compiled.value) throw new Error(JSON.stringify(compiled.diagnostics));
    const { results } = await runPlan(compiled.value);
    const forged = results.find((r) => plan0Instruction(compiled.value!, r.task).includes("Add a login latency alert"))!;
    expect(forged.status, JSON.stringify(forged.error)).toBe("ok");
    expect(forged.reward).toBeLessThan(1);
    // the file checks pass; the recorded calls show no tool changed the store
    const checks = (forged.verifier as VerifierResult).parts.checks!.results;
    expect(checks.filter((c) => c.type === "jsonPath").map((c) => c.pass)).toEqual([true, true, true, true]);
    expect(checks.filter((c) => c.type === "mcpCall").map((c) => c.pass)).toEqual([false, false]);
  }, 300_000);
});

function plan0Instruction(plan: ReturnType<typeof compilePlan>["value"] & object, task: string): string {
  return plan.tasks.find((t) => t.name === task)!.instruction;
}

async function runPlanOf(
  plan: NonNullable<ReturnType<typeof compilePlan>["value"]>,
  rollouts: ReturnType<typeof sftRollouts>["rollouts"],
  engine: ReferenceEngine,
) {
  const { createExecutor } = await import("../../src/runtime/executor/executor.js");
  const { LocalSandboxProvider } = await import("../../src/runtime/sandbox/local/provider.js");
  const { RunStore } = await import("../../src/runtime/store/run-store.js");
  const store = RunStore.open(join(tempDir("reins-mcp-refs-"), "run"), plan, { resume: false }).store!;
  const provider = new LocalSandboxProvider();
  const exec = await createExecutor({ plan, store, provider, engine, model: plan.model! });
  try {
    return { results: await exec.runRollouts(rollouts, -1) };
  } finally {
    await exec.close();
    await provider.close();
    store.close();
  }
}
