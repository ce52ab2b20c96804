/**
 * MCP servers in podman sandboxes, through `reins eval`: a server beside the rollout (its own pod)
 * and one inside the rollout's pod, both run with the host's node as the pod sees it, relayed and
 * recorded as in local sandboxes; the verifier reads the store the in-pod server wrote.
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { findExecutable } from "../../src/runtime/sandbox/host/executables.js";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const podman = findExecutable("podman");
const skip = !podman && process.env.REINS_SKIP_PODMAN === "1";

describe.skipIf(skip)("MCP servers in podman sandboxes", () => {
  it("reins-agent searches a server beside its pod and files a ticket with one inside it", () => {
    if (!podman) throw new Error("podman is not installed (apt-get install -y podman runc catatonit busybox-static socat), or set REINS_SKIP_PODMAN=1");
    const dir = tempDir("reins-mcp-podman-");
    cpSync(resolve("examples/mcp/runbooks"), join(dir, "runbooks"), { recursive: true });
    writeFileSync(
      join(dir, "eval.yaml"),
      `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: owner-and-ticket}
spec:
  instruction: Find the billing service's owner into owner.txt, then file an urgent ticket "Billing outage".
  mcpServers:
    - {name: search, shipped: web-search, args: [runbooks], where: beside, files: [{path: runbooks/billing.md, from: runbooks/billing.md}]}
    - {name: tickets, shipped: tickets, where: sandbox}
  verifier:
    checks:
      - fileEquals: {path: owner.txt, content: payments-core}
      - jsonPath: {path: tickets.json, query: "$.tickets[0].title", equals: Billing outage}
      - mcpCall: {server: search, tool: search}
  timeoutSeconds: 180
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: scripted-mcp}
spec:
  tokenizer: {type: qwen3}
  engine:
    type: scripted
    script:
      - toolCalls: [{name: search__search, arguments: {query: billing service owner}}]
      - toolCalls: [{name: write_file, arguments: {path: owner.txt, content: payments-core}}]
      - toolCalls: [{name: tickets__create_ticket, arguments: {title: Billing outage, priority: urgent}}]
      - text: done
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: mcp-podman}
spec:
  model: {name: scripted-mcp}
  tasks: [{name: owner-and-ticket}]
  harnesses: [{name: reins-agent}]
  attempts: 2
  sandbox: {provider: podman, concurrency: 2}
`,
    );
    const out = join(dir, "run");
    const r = reins(["eval", join(dir, "eval.yaml"), "--out", out, "--json", "--quiet"], { timeout: 600_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ rollouts: 2, errors: 0, meanReward: 1 });
    for (const line of readFileSync(join(out, "rollouts.jsonl"), "utf8").trim().split("\n")) {
      const rollout = JSON.parse(line);
      expect(rollout.mcp.servers.map((s: { name: string; where: string }) => [s.name, s.where])).toEqual([
        ["search", "beside"],
        ["tickets", "sandbox"],
      ]);
      expect(rollout.mcp.calls.map((c: { server: string; tool: string }) => `${c.server}.${c.tool}`)).toEqual(["search.search", "tickets.create_ticket"]);
    }
  }, 600_000);
});
