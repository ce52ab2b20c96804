// How each shipped harness's launch plan tells it of a rollout's MCP servers: nothing changes without
// servers; with some, the rendered config names each server's relay URL and the rollout's key.
import { describe, expect, it } from "vitest";
import { buildLaunchPlan, type LaunchContext, type LaunchRuntime } from "../../src/runtime/harness/launch-plan.js";
import { loadHarnessSpec } from "../harness/harness-spec.js";

const ctx: LaunchContext = { instruction: "Do it", workspace: "/w/task", baseUrl: "http://127.0.0.1:4000/r/r-1/", apiKey: "sk-rollout-1", home: "/w/home" };
const runtime: LaunchRuntime = { pathDirs: ["/cache/node/bin"], node: "/cache/node/bin/node", reinsAgent: "/reins/agent.mjs" };
const servers = [
  { name: "search", url: "http://127.0.0.1:4000/r/r-1/mcp/search", tools: ["search", "fetch"] },
  { name: "tickets", url: "http://127.0.0.1:4000/r/r-1/mcp/tickets", tools: null },
];

function plan(name: string, mcpServers?: typeof servers) {
  const r = buildLaunchPlan(loadHarnessSpec(name), { ...ctx, ...(mcpServers ? { mcpServers } : {}) }, runtime);
  if (!r.ok) throw new Error(r.problem.message);
  return r.value;
}

describe("launch plans with MCP servers", () => {
  it.each(["claude-code", "codex", "openclaw", "reins-agent"])("%s: an empty list changes nothing", (name) => {
    expect(plan(name, [])).toEqual(plan(name));
  });

  it("claude-code: one strict JSON --mcp-config of http servers with the bearer key", () => {
    const { argv } = plan("claude-code", servers);
    const i = argv.indexOf("--mcp-config");
    expect(argv.slice(i + 2)).toEqual(["--strict-mcp-config", "--", ctx.instruction]);
    expect(JSON.parse(argv[i + 1]!)).toEqual({
      mcpServers: {
        search: { type: "http", url: servers[0]!.url, headers: { Authorization: "Bearer sk-rollout-1" } },
        tickets: { type: "http", url: servers[1]!.url, headers: { Authorization: "Bearer sk-rollout-1" } },
      },
    });
  });

  it("codex: [mcp_servers.<name>] tables reading the key from REINS_API_KEY", () => {
    const p = plan("codex", servers);
    const toml = p.homeFiles.find((f) => f.path.endsWith("config.toml"))!.content;
    expect(toml).toContain(`[mcp_servers.search]\nurl = "${servers[0]!.url}"\nbearer_token_env_var = "REINS_API_KEY"\nrequired = true\n`);
    expect(toml).toContain(`[mcp_servers.tickets]\nurl = "${servers[1]!.url}"`);
    expect(p.env.REINS_API_KEY).toBe("sk-rollout-1");
  });

  it("openclaw: mcp.servers with streamable-http and the bearer header, still valid JSON", () => {
    const file = plan("openclaw", servers).homeFiles.find((f) => f.path.endsWith("reins.json5"))!.content;
    const config = JSON.parse(file);
    expect(config.mcp.servers.search).toEqual({ url: servers[0]!.url, transport: "streamable-http", headers: { Authorization: "Bearer sk-rollout-1" } });
    expect(Object.keys(config.mcp.servers)).toEqual(["search", "tickets"]);
  });

  it("openclaw with the tools knob: each server's tools join tools.allow as <name>__*", () => {
    const harness = { ...loadHarnessSpec("openclaw"), knobValues: { tools: ["write"] } };
    const r = buildLaunchPlan(harness, { ...ctx, mcpServers: servers }, runtime);
    if (!r.ok) throw new Error(r.problem.message);
    const config = JSON.parse(r.value.homeFiles.find((f) => f.path.endsWith("reins.json5"))!.content);
    expect(config.tools).toEqual({ allow: ["write", "search__*", "tickets__*"], toolSearch: false, deny: ["apply_patch"] });
    const none = buildLaunchPlan(harness, ctx, runtime);
    if (!none.ok) throw new Error(none.problem.message);
    expect(JSON.parse(none.value.homeFiles.find((f) => f.path.endsWith("reins.json5"))!.content).tools.allow).toEqual(["write"]);
  });

  it("reins-agent: REINS_MCP_SERVERS holds the list", () => {
    expect(JSON.parse(plan("reins-agent", servers).env.REINS_MCP_SERVERS!)).toEqual(servers);
  });

  it("a harness without an mcp section refuses servers", () => {
    const harness = { ...loadHarnessSpec("reins-agent") };
    delete harness.mcp;
    const r = buildLaunchPlan(harness, { ...ctx, mcpServers: servers }, runtime);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problem.code).toBe("McpUnsupportedByHarness");
  });
});
