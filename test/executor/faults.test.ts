/**
 * Faults end as the right outcome and the run goes on: a hanging harness times out (task failure),
 * a process that ignores SIGTERM does not survive its rollout, a sandbox killed from outside is an
 * infrastructure failure that is retried, a wrong workspace is a task failure (a reward).
 */
import { readFileSync, readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import type { Sandbox, SandboxProvider, SandboxSpec } from "../../src/runtime/sandbox/provider.js";
import { evaluationYaml, planOf, runPlan, taskYaml, tempDir, writeSpecs } from "./helpers.js";

function processesWith(marker: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (cmd.includes(marker)) out.push(Number(pid));
    } catch {
      /* gone */
    }
  }
  return out;
}

describe("executor faults", () => {
  it("a hanging harness times out, is killed with everything it forked, and scores 0", async () => {
    const marker = "7351.25";
    const plan = planOf(
      writeSpecs(
        tempDir(),
        evaluationYaml({
          command: ["bash", "-c", `(trap '' TERM HUP; setsid nohup sleep ${marker} >/dev/null 2>&1 &); trap '' TERM; sleep ${marker}`],
          tasks: taskYaml("hang", { timeoutSeconds: 3 }),
        }),
      ),
    );
    const { results } = await runPlan(plan);
    const hang = results.find((r) => r.task === "hang")!;
    expect(hang.status).toBe("timeout");
    expect(hang.reward).toBe(0);
    expect(hang.passed).toBe(false);
    expect(hang.tries).toBe(1);
    expect(processesWith(marker)).toEqual([]);
  }, 120_000);

  it("a wrong workspace is a task failure with a reason, not an infrastructure failure", async () => {
    const plan = planOf(writeSpecs(tempDir(), evaluationYaml({ command: ["bash", "-c", "printf bye > hello.txt"], tasks: taskYaml("wrong") })));
    const { results } = await runPlan(plan);
    expect(results[0]!.status).toBe("ok");
    expect(results[0]!.reward).toBe(0);
    expect(JSON.stringify(results[0]!.verifier)).toContain("hello.txt");
  }, 60_000);

  it("a sandbox killed from outside is retried as an infrastructure failure", async () => {
    const inner = new LocalSandboxProvider();
    let killed = 0;
    const provider: SandboxProvider = {
      type: "local",
      async create(spec: SandboxSpec): Promise<Sandbox> {
        const sb = await inner.create(spec);
        if (killed === 0) {
          killed++;
          setTimeout(() => void sb.destroy(), 1500);
        }
        return sb;
      },
      close: () => inner.close(),
    };
    const plan = planOf(writeSpecs(tempDir(), evaluationYaml({ command: ["bash", "-c", "sleep 4; printf hi > hello.txt"], tasks: taskYaml("killed") })));
    const { results } = await runPlan(plan, { provider });
    await inner.close();
    const r = results[0]!;
    expect(r.tries).toBe(2);
    expect(r.retries[0]!.code).toMatch(/Sandbox/);
    expect(r.status).toBe("ok");
    expect(r.reward).toBe(1);
  }, 90_000);

  it("exhausted infrastructure retries give no reward (never a silent 0)", async () => {
    const inner = new LocalSandboxProvider();
    const provider: SandboxProvider = {
      type: "local",
      async create(spec: SandboxSpec): Promise<Sandbox> {
        const sb = await inner.create(spec);
        setTimeout(() => void sb.destroy(), 800);
        return sb;
      },
      close: () => inner.close(),
    };
    const plan = planOf(
      writeSpecs(tempDir(), evaluationYaml({ command: ["bash", "-c", "sleep 3; printf hi > hello.txt"], tasks: taskYaml("doomed"), retries: 1 })),
    );
    const { results } = await runPlan(plan, { provider });
    await inner.close();
    expect(results[0]!.status).toBe("infra-failed");
    expect(results[0]!.reward).toBeNull();
    expect(results[0]!.tries).toBe(2);
  }, 90_000);
});
