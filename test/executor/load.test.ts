/** 64 concurrent rollouts of a light harness on this 2-core machine, without an infrastructure failure. */
import { describe, expect, it } from "vitest";
import { evaluationYaml, planOf, runPlan, taskYaml, tempDir, writeSpecs } from "./helpers.js";

describe("load", () => {
  it("runs 64 rollouts at once without an infrastructure failure", async () => {
    const tasks = Array.from({ length: 16 }, (_, i) => taskYaml(`load${i}`)).join("---\n");
    const plan = planOf(
      writeSpecs(tempDir(), evaluationYaml({ command: ["bash", "-c", "sleep 2; printf hi > hello.txt"], tasks, attempts: 4, concurrency: 64, retries: 0 })),
    );
    let peak = 0;
    let running = 0;
    const { results } = await runPlan(plan, {
      onEvent: (e) => {
        if (e.type === "rollout-started") peak = Math.max(peak, ++running);
        if (e.type === "rollout-finished") running--;
      },
    });
    expect(results.length).toBe(64);
    expect(results.filter((r) => r.status !== "ok").map((r) => `${r.id}: ${r.error?.code} ${r.error?.message}`)).toEqual([]);
    expect(results.every((r) => r.tries === 1 && r.reward === 1)).toBe(true);
    expect(peak).toBe(64);
  }, 300_000);
});
