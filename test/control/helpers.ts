/** Helpers for the control-loop tests: a tiny copy of the quickstart experiment, the run's records. */
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnReins } from "../reins-cli.js";

export function experiment(dir: string): string {
  mkdirSync(join(dir, "spec"), { recursive: true });
  cpSync("examples/quickstart/family.yaml", join(dir, "spec", "family.yaml"));
  writeFileSync(
    join(dir, "spec", "model.yaml"),
    readFileSync("examples/quickstart/model.yaml", "utf8").replace(/\.\.\/\.\.\/\.reins\/quickstart\/policy/g, "policy"),
  );
  const text = readFileSync("examples/quickstart/experiment.yaml", "utf8")
    .replace(/ {2}steps: \d+\n/, "  steps: 3\n")
    .replace(/ {2}tasksPerStep: \d+\n/, "  tasksPerStep: 2\n")
    .replace(/ {4}groupSize: \d+\n/, "    groupSize: 2\n")
    .replace(/ {2}sft: \{[^}]*\}/, "  sft: {steps: 3, learningRate: 3e-3, batchSize: 4}")
    .replace(/ {2}eval: \{[^}]*\}/, "  eval: {everySteps: 0, attempts: 1}");
  const file = join(dir, "spec", "experiment.yaml");
  writeFileSync(file, text);
  return file;
}

export function events(runDir: string): any[] {
  if (!existsSync(join(runDir, "events.jsonl"))) return [];
  return readFileSync(join(runDir, "events.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return [];
      }
    });
}

/** Rewrite a spec file in place: each [pattern, replacement], each pattern must match. */
export function editSpec(file: string, edits: [RegExp, string][]): void {
  let text = readFileSync(file, "utf8");
  for (const [pattern, replacement] of edits) {
    if (!pattern.test(text)) throw new Error(`${file} has no ${pattern}`);
    text = text.replace(pattern, replacement);
  }
  writeFileSync(file, text);
}

/** The JSON file a rollout created in its workspace (report.json, …), read back from its workspace diff in the run directory. */
export function createdJson(runDir: string, rolloutId: string, path: string): any {
  const diff = JSON.parse(readFileSync(join(runDir, "workspace-diff", `${rolloutId}.json`), "utf8"));
  const patch: string = diff.files.find((f: { path: string }) => f.path === path).patch;
  return JSON.parse(
    patch
      .split("\n")
      .filter((l) => l.startsWith("+") && !l.startsWith("+++"))
      .map((l) => l.slice(1))
      .join("\n"),
  );
}

/** The lines of a run's JSONL file (calls.jsonl, rollouts.jsonl, metrics.jsonl); [] when absent. */
export function jsonl(runDir: string, name: string): any[] {
  if (!existsSync(join(runDir, name))) return [];
  return readFileSync(join(runDir, name), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** A Python stack trace or a Node one in a command's stderr. */
export const STACK_TRACE = /Traceback \(most recent call last\)|\n\s+at .+:\d+:\d+\)?\n/;

/**
 * `reins run FILE --out RUNDIR --quiet`, killed with SIGKILL as soon as its first trained step is
 * checkpointed; resolves once it has exited. `tmp` becomes its TMPDIR (what a killed run cannot
 * clean up stays there).
 */
export async function runKilledAfterFirstStep(file: string, runDir: string, tmp: string): Promise<void> {
  const child = spawnReins(["run", file, "--out", runDir, "--quiet"], { stdio: "ignore", env: { TMPDIR: tmp } });
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (events(runDir).some((e) => e.type === "checkpoint" && e.phase === "step")) {
        clearInterval(timer);
        child.kill("SIGKILL");
        resolve();
      }
    }, 100);
    child.on("exit", () => {
      clearInterval(timer);
      reject(new Error("the run ended before it could be killed"));
    });
  });
  await new Promise((res) => child.on("exit", res));
}
