import { describe, expect, it } from "vitest";
import { buildLaunchPlan, renderTemplate, type LaunchContext, type LaunchRuntime } from "../../src/runtime/harness/launch-plan.js";
import { loadHarnessSpec } from "./harness-spec.js";

const ctx: LaunchContext = {
  instruction: "Create a file hello.txt containing hi",
  workspace: "/w/task",
  baseUrl: "http://127.0.0.1:4000/r/r-1/",
  apiKey: "sk-rollout-1",
  home: "/w/home",
};
const runtime: LaunchRuntime = {
  pathDirs: ["/cache/node/bin", "/cache/pkg/node_modules/.bin"],
  node: "/cache/node/bin/node",
  reinsAgent: "/reins/agent.mjs",
  bin: "/cache/pkg/node_modules/.bin/claude",
};

function planFor(name: string, overrides: Partial<LaunchRuntime> = {}) {
  const r = buildLaunchPlan(loadHarnessSpec(name), ctx, { ...runtime, ...overrides });
  if (!r.ok) throw new Error(r.problem.message);
  return r.value;
}

describe("buildLaunchPlan", () => {
  it("renders Claude Code's argv with the instruction as one argument and the installed executable", () => {
    const plan = planFor("claude-code");
    expect(plan.argv[0]).toBe("/cache/pkg/node_modules/.bin/claude");
    expect(plan.argv[1]).toBe("-p");
    expect(plan.argv.slice(-2)).toEqual(["--", ctx.instruction]);
    expect(plan.argv).toContain("claude-sonnet-4-5");
    expect(plan.cwd).toBe("/w/task");
  });

  it("starts the environment empty: only PATH, LANG, HOME, the harness's env and its opt-outs", () => {
    process.env.REINS_TEST_HOST_SECRET = "do-not-leak";
    const plan = planFor("claude-code");
    expect(Object.keys(plan.env).sort()).toEqual(
      [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "CLAUDE_CODE_ATTRIBUTION_HEADER",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "DISABLE_AUTOUPDATER",
        "DISABLE_ERROR_REPORTING",
        "DISABLE_TELEMETRY",
        "HOME",
        "IS_SANDBOX",
        "LANG",
        "PATH",
      ].sort(),
    );
    expect(plan.env.ANTHROPIC_BASE_URL).toBe("http://127.0.0.1:4000/r/r-1");
    expect(plan.env.HOME).toBe("/w/home");
    expect(plan.env.PATH.startsWith("/cache/node/bin:/cache/pkg/node_modules/.bin:")).toBe(true);
    expect(Object.values(plan.env)).not.toContain("do-not-leak");
    delete process.env.REINS_TEST_HOST_SECRET;
  });

  it("lets the caller's extra env win over the harness's", () => {
    const plan = planFor("claude-code", { extraEnv: { HTTPS_PROXY: "http://127.0.0.1:9", DISABLE_TELEMETRY: "0" } });
    expect(plan.env.HTTPS_PROXY).toBe("http://127.0.0.1:9");
    expect(plan.env.DISABLE_TELEMETRY).toBe("0");
  });

  it("writes Codex's config.toml pointing at the proxy's /v1 with the Responses wire API and every opt-out", () => {
    const plan = planFor("codex", { bin: "/cache/codex/node_modules/.bin/codex" });
    expect(plan.homeFiles.map((f) => f.path)).toEqual(["/w/home/.codex/config.toml", "/w/home/.codex/reins-instructions.md"]);
    const toml = plan.homeFiles[0].content;
    expect(toml).toContain('base_url = "http://127.0.0.1:4000/r/r-1/v1"');
    expect(toml).toContain('wire_api = "responses"');
    expect(toml).toContain('model = "gpt-5-codex"');
    expect(toml).toContain('env_key = "REINS_API_KEY"');
    for (const table of ["[analytics]", "[feedback]", "[otel]", "[features]"]) expect(toml).toContain(table);
    // Top-level keys must come before the first table.
    expect(toml.indexOf("check_for_update_on_startup")).toBeLessThan(toml.indexOf("["));
    expect(plan.env.CODEX_HOME).toBe("/w/home/.codex");
    expect(plan.env.REINS_API_KEY).toBe("sk-rollout-1");
    expect(plan.argv.slice(0, 2)).toEqual(["/cache/codex/node_modules/.bin/codex", "exec"]);
  });

  it("writes OpenClaw's config as valid JSON with the provider's base URL, dialect and model", () => {
    const plan = planFor("openclaw", { bin: "/cache/openclaw/node_modules/.bin/openclaw" });
    const config = JSON.parse(plan.homeFiles[0].content);
    const provider = config.models.providers.reins;
    expect(provider.baseUrl).toBe("http://127.0.0.1:4000/r/r-1/v1");
    expect(provider.api).toBe("openai-responses");
    expect(provider.apiKey).toBe("${REINS_API_KEY}");
    expect(provider.models[0].id).toBe("reins-policy");
    expect(config.agents.defaults.model.primary).toBe("reins/reins-policy");
    expect(plan.argv).toContain("/w/home/.openclaw/reins.json5");
    expect(plan.argv.slice(-2)).toEqual(["--", ctx.instruction]);
  });

  it("runs reins-agent with node from PATH and its script path", () => {
    const plan = planFor("reins-agent", { bin: undefined });
    expect(plan.argv).toEqual(["node", "/reins/agent.mjs", "--", ctx.instruction]);
    expect(plan.env.REINS_BASE_URL).toBe("http://127.0.0.1:4000/r/r-1/v1");
    expect(plan.env.REINS_MODEL).toBe("reins-policy");
  });

  it("uses the context's model over the harness's", () => {
    const r = buildLaunchPlan(loadHarnessSpec("reins-agent"), { ...ctx, model: "other" }, runtime);
    expect(r.ok && r.value.env.REINS_MODEL).toBe("other");
  });

  it("reports a template variable that does not exist instead of rendering an empty string", () => {
    const harness = { ...loadHarnessSpec("reins-agent"), command: ["node", "{{workspce}}"] };
    const r = buildLaunchPlan(harness, ctx, runtime);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.problem.code).toBe("HarnessTemplateInvalid");
      expect(r.problem.message).toContain("command[1]");
      expect(r.problem.message).toContain("workspce");
    }
  });

  it("refuses home files outside HOME", () => {
    for (const bad of ["../escape.toml", "/etc/passwd", "."]) {
      const harness = { ...loadHarnessSpec("codex"), homeFiles: [{ path: bad, content: "x" }] };
      const r = buildLaunchPlan(harness, ctx, runtime);
      expect(r.ok ? "ok" : r.problem.code).toBe("HarnessHomeFileInvalid");
    }
  });

  it("does not HTML-escape and offers a json helper", () => {
    const r = renderTemplate("a={{json instruction}} b={{instruction}}", { instruction: 'say "<hi>" & go' }, "t");
    expect(r.ok && r.value).toBe('a="say \\"<hi>\\" & go" b=say "<hi>" & go');
  });

  it("refuses an empty command", () => {
    const r = buildLaunchPlan({ ...loadHarnessSpec("reins-agent"), command: [] }, ctx, runtime);
    expect(r.ok ? "ok" : r.problem.code).toBe("HarnessCommandEmpty");
  });
});
