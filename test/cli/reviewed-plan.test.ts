/**
 * The reviewed plan is what runs: `reins plan --out plan.json`, then `reins eval plan.json` runs
 * exactly that file's rollouts; an edited plan file is refused; `--resume` runs only the plan the
 * run started with.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { reins as launch } from "../reins-cli.js";

const dir = mkdtempSync(join(tmpdir(), "reins-reviewed-plan-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function reins(...args: string[]) {
  return launch(args, { cwd: dir, timeout: 120_000 });
}

function specs(attempts: number): string {
  const task = (name: string) => `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: ${name}, labels: {suite: t}}
spec:
  instruction: Create hello.txt containing hi
  verifier: {checks: [{fileEquals: {path: hello.txt, content: "hi"}}]}
`;
  return `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: reviewed}
spec:
  tasks: [{labels: {suite: t}}]
  harnesses: [{name: h}]
  attempts: ${attempts}
  sandbox: {provider: local, concurrency: 4}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: h}
spec:
  command: ["bash", "-c", "printf hi > hello.txt"]
---
${task("alpha")}---
${task("beta")}`;
}

const ids = (file: string) =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l).id as string)
    .sort();

describe("reins plan --out, then reins eval plan.json", () => {
  writeFileSync(join(dir, "specs.yaml"), specs(2));

  it("runs exactly the rollouts of the plan file, under its hash", () => {
    const planned = reins("plan", "specs.yaml", "--out", "plan.json", "--json");
    expect(planned.code, planned.stderr).toBe(0);
    const plan = JSON.parse(readFileSync(join(dir, "plan.json"), "utf8"));
    expect(JSON.parse(planned.stdout).hash).toBe(plan.hash);

    const r = reins("eval", "plan.json", "--out", "run", "--json");
    expect(r.code, r.stderr).toBe(0);
    // --json keeps stdout for the outcome alone; the progress still goes to stderr.
    expect(r.stderr).toMatch(/: 4\/4 rollouts in \S+/);
    // The command to look at the run, pasteable where reins ran: first and last.
    const talk = r.stderr.trim().split("\n");
    expect(talk[0]).toBe(`run directory ${join(dir, "run")}; watch it: reins view run`);
    expect(talk.at(-1)).toBe("see the run: reins view run");
    const summary = JSON.parse(r.stdout);
    expect(summary.planHash).toBe(plan.hash);
    const plannedIds = plan.steps.flatMap((s: { rollouts: { id: string }[] }) => s.rollouts.map((x) => x.id)).sort();
    expect(plannedIds).toHaveLength(4);
    expect(ids(join(dir, "run/rollouts.jsonl"))).toEqual(plannedIds);
    expect(readFileSync(join(dir, "run/plan.json"), "utf8")).toBe(readFileSync(join(dir, "plan.json"), "utf8"));
  });

  it("refuses a plan file edited after planning, and runs nothing", () => {
    const plan = JSON.parse(readFileSync(join(dir, "plan.json"), "utf8"));
    plan.steps[0].rollouts.pop();
    writeFileSync(join(dir, "edited.json"), JSON.stringify(plan, null, 2));
    const r = reins("eval", "edited.json", "--out", "edited-run");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[PlanEdited]: edited.json was changed after it was planned");
    expect(r.stderr).toContain("hint: A plan file runs only as `reins plan` wrote it");
    expect(existsSync(join(dir, "edited-run"))).toBe(false);

    // Derived parts too: the manifests must be the ones the plan implies.
    const manifests = JSON.parse(readFileSync(join(dir, "plan.json"), "utf8"));
    manifests.manifests.push({ apiVersion: "v1", kind: "Pod", metadata: { name: "extra" } });
    writeFileSync(join(dir, "manifests.json"), JSON.stringify(manifests));
    const m = reins("run", "manifests.json");
    expect(m.code).toBe(1);
    expect(m.stderr).toContain("error[PlanEdited]: manifests.json was changed after it was planned: its manifests");
  });

  it("resumes only with the plan the run started with", () => {
    writeFileSync(join(dir, "changed.yaml"), specs(3));
    const changed = reins("eval", "changed.yaml", "--resume", "run");
    expect(changed.code).toBe(1);
    expect(changed.stderr).toMatch(/error\[PlanChanged\]: .*run ran another plan/);
    expect(changed.stderr).toContain("hint: Resume with the specs (or plan file) the run started from");

    const same = reins("eval", "plan.json", "--resume", "run", "--json", "--quiet");
    expect(same.code, same.stderr).toBe(0);
    const alone = reins("eval", "--resume", "run", "--json", "--quiet");
    expect(alone.code, alone.stderr).toBe(0);
    expect(ids(join(dir, "run/rollouts.jsonl"))).toHaveLength(4);

    const stored = JSON.parse(readFileSync(join(dir, "run/plan.json"), "utf8"));
    stored.attempts = 5;
    writeFileSync(join(dir, "run/plan.json"), JSON.stringify(stored));
    const edited = reins("eval", "--resume", "run");
    expect(edited.code).toBe(1);
    expect(edited.stderr).toContain("error[PlanEdited]: ");
  });

  it("`reins run` of an Evaluation's plan file points to `reins eval`", () => {
    const r = reins("run", "plan.json");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[NotAnExperiment]: reviewed is an Evaluation");
    expect(r.stderr).toContain("hint: Run it with: reins eval plan.json");
  });
});
