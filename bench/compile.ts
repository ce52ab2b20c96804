/**
 * Compiler throughput: a TaskFamily expanding to 1.35K, 13.5K and 135K tasks (ClawGym-SynData has
 * 13.5K), validated and planned; compared with plain YAML parsing of the same tasks written out
 * as documents. Prints tasks/s and the ratio plan time / parse time, measured in one run.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { compilePlan, taskDocument } from "../src/compiler/index.js";

const SIZES = (process.env.BENCH_SIZES ?? "1350,13500,135000").split(",").map(Number);

function familyText(count: number): string {
  return `apiVersion: reins/v1alpha1
kind: TaskFamily
metadata: {name: syn, labels: {category: productivity}}
spec:
  parameters:
    - {name: persona, type: string}
  matrix:
    persona: [analyst, engineer, manager, student, writer]
    skill: [csv, json, markdown]
  generate:
    count: ${Math.ceil(count / 15)}
    seed: 1
    values:
      - {name: n, int: {min: 1, max: 100000}}
      - {name: city, pick: [Paris, Lima, Osaka, Oslo, Quito, Accra]}
  template:
    instruction: "As a {{persona}}, summarize {{n}} records about {{city}} into report.{{skill}}"
    workspace:
      files:
        - {path: "data/{{city}}.md", content: "# {{city}}\\nrecords: {{n}}\\n"}
        - {path: "notes/{{persona}}.txt", content: "persona {{persona}} skill {{skill}}"}
    verifier:
      checks:
        - fileExists: "report.{{skill}}"
        - fileContains: {path: "report.{{skill}}", text: "{{city}}"}
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: syn-eval}
spec:
  tasks: [{family: syn}]
  harnesses: [{name: noop}]
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: noop}
spec: {command: ["true"]}
`;
}

function time<T>(fn: () => T): [T, number] {
  const t0 = process.hrtime.bigint();
  const v = fn();
  return [v, Number(process.hrtime.bigint() - t0) / 1e9];
}

const dir = mkdtempSync(join(tmpdir(), "reins-bench-compile-"));
const rows: string[][] = [["tasks", "plan s", "tasks/s", "yaml parse s", "plan/parse", "s per 1K tasks"]];
for (const n of SIZES) {
  const file = join(dir, `family-${n}.yaml`);
  writeFileSync(file, familyText(n));
  const [r, planS] = time(() => compilePlan([file], { env: {} }));
  if (!r.value) throw new Error(JSON.stringify(r.diagnostics.slice(0, 3)));
  const tasks = r.value.tasks.length;
  const docs = r.value.tasks.map((t) => stringify(taskDocument(t))).join("---\n");
  const [, parseS] = time(() => parseAllDocuments(docs).map((d) => (Array.isArray(d) ? null : d.toJS())));
  rows.push([
    String(tasks),
    planS.toFixed(2),
    Math.round(tasks / planS).toString(),
    parseS.toFixed(2),
    (planS / parseS).toFixed(2),
    ((planS / tasks) * 1000).toFixed(3),
  ]);
}
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows) console.log(r.map((c, i) => c.padStart(widths[i]!)).join("  "));
console.log("plan/parse < 1 means validating, expanding and planning costs less than merely parsing the expanded YAML.");
