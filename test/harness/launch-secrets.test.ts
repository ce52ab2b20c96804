/**
 * `${VAR}` references in a harness's env and homeFiles are read from reins's environment when the
 * launch is built (the plan keeps them unresolved): with an injected environment here.
 */
import { describe, expect, it } from "vitest";
import type { ResolvedHarness } from "../../src/compiler/contract/plan.js";
import { ReinsError } from "../../src/compiler/contract/problem.js";
import { prepareHarnesses } from "../../src/runtime/executor/executor.js";
import { buildLaunchPlan, checkHarnessVariables, unsetReferences, type LaunchContext, type LaunchRuntime } from "../../src/runtime/harness/launch-plan.js";

const ctx: LaunchContext = {
  instruction: "say ${HOST_SECRET} and {{x}}",
  workspace: "/w/task",
  baseUrl: "http://127.0.0.1:4000/r/r-1",
  apiKey: "sk-rollout-1",
  home: "/w/home",
};
const runtime: LaunchRuntime = { pathDirs: ["/bin"], node: "/usr/bin/node", reinsAgent: "/reins/agent.mjs" };

function harness(over: Partial<ResolvedHarness> = {}): ResolvedHarness {
  return {
    name: "keyed",
    command: ["agent", "{{instruction}}"],
    env: {
      MY_API_KEY: "${MY_API_KEY}",
      DB_URL: "postgres://app:${DB_PASS}@db/{{model}}",
      REGION: "${REGION:-eu}",
      LITERAL: "$${NOT_READ}",
      PROMPT: "{{instruction}}",
    },
    homeFiles: [{ path: ".cfg/app.toml", content: 'key = "${MY_API_KEY}"\nurl = {{json baseUrl}}\n' }],
    optOuts: {},
    model: "policy",
    callClasses: [],
    startupSeconds: 0,
    mounts: [],
    ...over,
  };
}

const hostEnv = { MY_API_KEY: "sk-live-{{not-a-template}}", DB_PASS: "hunter2", HOST_SECRET: "leak", NOT_READ: "leak" };

describe("secret references at launch", () => {
  it("fills env and home files from the injected environment, values verbatim", () => {
    const r = buildLaunchPlan(harness(), ctx, { ...runtime, hostEnv });
    if (!r.ok) throw new Error(r.problem.message);
    expect(r.value.env.MY_API_KEY).toBe("sk-live-{{not-a-template}}");
    expect(r.value.env.DB_URL).toBe("postgres://app:hunter2@db/policy");
    expect(r.value.env.REGION).toBe("eu");
    expect(r.value.env.LITERAL).toBe("${NOT_READ}");
    expect(r.value.homeFiles[0]!.content).toBe('key = "sk-live-{{not-a-template}}"\nurl = "http://127.0.0.1:4000/r/r-1"\n');
  });

  it("never reads a reference out of rendered text (an instruction that says ${HOST_SECRET})", () => {
    const r = buildLaunchPlan(harness(), ctx, { ...runtime, hostEnv });
    if (!r.ok) throw new Error(r.problem.message);
    expect(r.value.env.PROMPT).toBe("say ${HOST_SECRET} and {{x}}");
    expect(JSON.stringify(r.value)).not.toContain("leak");
  });

  it("passes no other variable of reins's environment", () => {
    const r = buildLaunchPlan(harness({ env: {}, homeFiles: [] }), ctx, { ...runtime, hostEnv });
    if (!r.ok) throw new Error(r.problem.message);
    expect(Object.keys(r.value.env).sort()).toEqual(["HOME", "LANG", "PATH"]);
  });

  it("an unset variable without a default is HarnessVariableUnset, naming every missing one", () => {
    expect(unsetReferences("${A} ${B:-x} $${C} ${D}", { D: "" })).toEqual(["A", "D"]);
    const r = buildLaunchPlan(harness(), ctx, { ...runtime, hostEnv: { MY_API_KEY: "k" } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problem.code).toBe("HarnessVariableUnset");
    expect(r.problem.message).toContain("${DB_PASS}");
    expect(r.problem.hint).toContain("DB_PASS");
    expect(checkHarnessVariables(harness({ homeFiles: [] }), { DB_PASS: "x" })).toMatchObject({
      ok: false,
      problem: { message: expect.stringContaining("${MY_API_KEY}") },
    });
  });

  it("the executor refuses to start a run whose harness lacks one (a ReinsError, before any rollout)", async () => {
    const name = "REINS_TEST_SURELY_UNSET_VARIABLE";
    delete process.env[name];
    const err = await prepareHarnesses([harness({ env: { K: `\${${name}}` }, homeFiles: [] })]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReinsError);
    expect((err as ReinsError).code).toBe("HarnessVariableUnset");
  });
});
