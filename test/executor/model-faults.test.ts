/**
 * Faults around the model: a model-calling harness that crashes before its first call, and an
 * inference engine that cannot be reached, are infrastructure failures (retried, then no reward),
 * never a reward of 0; the run goes on with the other rollouts. A retried rollout's calls carry
 * its plan id and the try that made them.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import type { SandboxProvider } from "../../src/runtime/sandbox/provider.js";
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
    const plan = planOf(
      writeSpecs(
        tempDir(),
        specs(`  dialect: openai-chat\n  command: ["bash", "-c", "echo cannot start >&2; exit 3"]`, "{type: scripted, script: [{text: done}]}"),
      ),
    );
    const { results, store } = await runPlan(plan);
    const crashed = results.find((r) => r.harness === "h")!;
    expect(crashed.status).toBe("infra-failed");
    expect(crashed.reward).toBeNull();
    expect(crashed.tries).toBe(2);
    expect(crashed.error?.code).toBe("HarnessCrashedEarly");
    expect(crashed.error?.message).toContain("cannot start");
    // What it printed in each try is in the run directory.
    for (const tryId of [crashed.id, `${crashed.id}.t2`])
      expect(readFileSync(join(store.dir, "harness-output", `${tryId}.stderr`), "utf8")).toBe("cannot start\n");
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

  it("a rollout retried after an infrastructure failure keeps its id; its calls say which try made them", async () => {
    const agent = `  dialect: openai-chat\n  command: [node, "{{reinsAgent}}", "{{instruction}}"]\n  env: {REINS_BASE_URL: "{{baseUrl}}/v1", REINS_API_KEY: "{{apiKey}}", REINS_MODEL: m}`;
    const script =
      "{type: scripted, script: [{text: 'Writing it.', toolCalls: [{name: write_file, arguments: {path: hello.txt, content: hi}}]}, {text: done}]}";
    const inner = new LocalSandboxProvider();
    let refused = false;
    const provider: SandboxProvider = {
      type: "local",
      async create(spec) {
        if (spec.harness === "h" && !refused) {
          refused = true;
          throw new Error("no sandbox slot is free");
        }
        return inner.create(spec);
      },
      close: () => inner.close(),
    };
    const plan = planOf(writeSpecs(tempDir(), specs(agent, script)));
    const { results, store } = await runPlan(plan, { provider });
    await inner.close();
    const r = results.find((x) => x.harness === "h")!;
    expect(r.tries).toBe(2);
    expect(r.reward).toBe(1);
    expect(store.calls().map((c) => [c.rolloutId, c.try, c.seq])).toEqual([
      [r.id, 2, 0],
      [r.id, 2, 1],
    ]);
  }, 120_000);
});
