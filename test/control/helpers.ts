/** Helpers for the control-loop tests: a tiny copy of the quickstart experiment, the run's events. */
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function experiment(dir: string): string {
  mkdirSync(join(dir, "spec"), { recursive: true });
  cpSync("examples/quickstart/family.yaml", join(dir, "spec", "family.yaml"));
  writeFileSync(
    join(dir, "spec", "model.yaml"),
    readFileSync("examples/quickstart/model.yaml", "utf8").replace(/\.\.\/\.\.\/\.reins\/quickstart\/policy/g, "policy"),
  );
  const text = readFileSync("examples/quickstart/experiment.yaml", "utf8")
    .replace(/  steps: \d+\n/, "  steps: 3\n")
    .replace(/  tasksPerStep: \d+\n/, "  tasksPerStep: 2\n")
    .replace(/    groupSize: \d+\n/, "    groupSize: 2\n")
    .replace(/  sft: \{[^}]*\}/, "  sft: {steps: 3, learningRate: 3e-3, batchSize: 4}")
    .replace(/  eval: \{[^}]*\}/, "  eval: {everySteps: 0, attempts: 1}");
  const file = join(dir, "spec", "experiment.yaml");
  writeFileSync(file, text);
  return file;
}

export function events(runDir: string): any[] {
  if (!existsSync(join(runDir, "events.jsonl"))) return [];
  return readFileSync(join(runDir, "events.jsonl"), "utf8").split("\n").filter(Boolean).flatMap((l) => {
    try {
      return [JSON.parse(l)];
    } catch {
      return [];
    }
  });
}

