/**
 * Faults around the model: a model-calling harness that crashes before its first call, and an
 * inference engine that cannot be reached, are infrastructure failures (retried, then no reward),
 * never a reward of 0; the run goes on with the other rollouts.
 */
import { describe, expect, it } from "vitest";
import { planOf, runPlan, taskYaml, tempDir, writeSpecs } from "./helpers.js";

function specs(harness: string, engine: string): string {
  return `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: t}
spec:
  model: {name: m}
  tasks: [{labels: {suite: t}}]
  harnesses: [{name: h}, {name: writer}]
  sandbox: {provider: local, concurrency: 2, retries: 1}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: h}
spec:
${harness}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: writer}
spec:
  command: ["bash", "-c", "printf hi > hello.txt"]
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: m}
spec:
  tokenizer: {type: qwen3}
  engine: ${engine}
---
${taskYaml("t1")}`;
}

describe("model faults", () => {
  it("a harness that crashes before its first model call is retried, then reported without a reward", async () => {
    const plan = planOf(writeSpecs(tempDir(), specs(`  dialect: openai-chat\n  command: ["bash", "-c", "echo cannot start >&2; exit 3"]`, "{type: scripted, script: [{text: done}]}")));
    const { results } = await runPlan(plan);
    const crashed = results.find((r) => r.harness === "h")!;
    expect(crashed.status).toBe("infra-failed");
    expect(crashed.reward).toBeNull();
    expect(crashed.tries).toBe(2);
    expect(crashed.error?.code).toBe("HarnessCrashedEarly");
    expect(crashed.error?.message).toContain("cannot start");
    // The run went on: the other harness's rollout scored normally.
    expect(results.find((r) => r.harness === "writer")!.reward).toBe(1);
  }, 120_000);

  it("an unreachable engine is an infrastructure failure, not a task failure", async () => {
    const agent = `  dialect: openai-chat\n  command: [node, "{{reinsAgent}}", "{{instruction}}"]\n  env: {REINS_BASE_URL: "{{baseUrl}}/v1", REINS_API_KEY: "{{apiKey}}", REINS_MODEL: m, REINS_RETRIES: "1"}`;
    const plan = planOf(writeSpecs(tempDir(), specs(agent, "{type: openai-compatible, baseUrl: 'http://127.0.0.1:9/v1', model: m}")));
    const { results } = await runPlan(plan);
    const r = results.find((x) => x.harness === "h")!;
    expect(r.status).toBe("infra-failed");
    expect(r.reward).toBeNull();
    expect(r.error?.code).toBe("EngineUnavailable");
    expect(results.find((x) => x.harness === "writer")!.reward).toBe(1);
  }, 120_000);
});
