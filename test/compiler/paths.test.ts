/**
 * Paths are resolved once, by the compiler, against the caller's cwd: relative spec paths from
 * `{cwd}`, host paths in specs (model files, harness mounts) from the file that names them, absolute
 * in the plan. The project here is the whole temp directory (`projectRoot`), since the mount and
 * the model's files are siblings of specs/. The hash sees them relative to Plan.root, so it does
 * not depend on where the project lives.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan, diffPlans, hashPlan, loadProxyConfig, validateSpecs } from "../../src/compiler/index.js";
import { tempDir } from "../temp.js";

function project(): string {
  const dir = tempDir("reins-paths-");
  mkdirSync(join(dir, "specs"));
  mkdirSync(join(dir, "tools"));
  writeFileSync(
    join(dir, "specs", "model.yaml"),
    `apiVersion: reins/v1alpha1
kind: Model
metadata: {name: small}
spec:
  tokenizer: {type: file, path: ../assets/tokenizer.json}
  engine: {type: onnx, modelPath: ../assets/policy}
`,
  );
  writeFileSync(
    join(dir, "specs", "eval.yaml"),
    `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: e}
spec:
  imports: [model.yaml]
  model: {name: small}
  tasks: [{name: t}]
  harnesses: [{name: h}]
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: h}
spec:
  dialect: openai-chat
  command: [agent, "--", "{{instruction}}"]
  mounts: [{path: ../tools, sandboxPath: /opt/tools}]
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec:
  instruction: x
  verifier: {checks: [{fileExists: a.txt}]}
`,
  );
  return dir;
}

function planIn(cwd: string, file = "specs/eval.yaml") {
  const r = compilePlan([file], { cwd, env: {}, projectRoot: "." });
  expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return r.value!;
}

describe("paths in the plan", () => {
  it("resolves the files given from the caller's cwd, not the process's, and records it as root", () => {
    const dir = project();
    expect(process.cwd()).not.toBe(dir);
    const plan = planIn(dir);
    expect(plan.root).toBe(dir);
    expect(plan.sources.map((s) => s.file)).toEqual(["specs/eval.yaml", "specs/model.yaml"]);
    expect(validateSpecs(["specs"], { cwd: dir, env: {}, projectRoot: "." }).diagnostics).toEqual([]);
  });

  it("makes model and mount paths absolute, relative to the spec file that names them", () => {
    const dir = project();
    const plan = planIn(dir);
    expect(plan.model!.tokenizer).toEqual({ type: "file", path: join(dir, "assets", "tokenizer.json") });
    expect(plan.model!.engine).toMatchObject({ type: "onnx", modelPath: join(dir, "assets", "policy") });
    expect(plan.harnesses[0]!.mounts).toEqual([{ hostPath: join(dir, "tools"), sandboxPath: "/opt/tools" }]);
  });

  it("keeps the hash (and diff) independent of where the project lives, but not of the paths themselves", () => {
    const a = project();
    const b = tempDir("reins-paths-moved-");
    cpSync(a, b, { recursive: true });
    const pa = planIn(a);
    const pb = planIn(b);
    expect(pb.model!.tokenizer).not.toEqual(pa.model!.tokenizer);
    expect(pb.hash).toBe(pa.hash);
    expect(pb.steps.map((s) => s.hash)).toEqual(pa.steps.map((s) => s.hash));
    expect(hashPlan(JSON.parse(JSON.stringify(pb)))).toBe(pb.hash);
    const diff = diffPlans(pa, pb);
    expect(diff.same).toBe(true);
    expect(diff.changes).toEqual([]);

    writeFileSync(join(b, "specs", "model.yaml"), readFileSync(join(b, "specs", "model.yaml"), "utf8").replace("../assets/policy", "../assets/other"));
    const pc = planIn(b);
    expect(pc.hash).not.toBe(pa.hash);
    expect(diffPlans(pb, pc).changes).toEqual([{ path: "model.engine.modelPath", before: "assets/policy", after: "assets/other" }]);
  });

  it("a proxy config file is read from the caller's cwd with the same absolute paths", async () => {
    const dir = project();
    const r = await loadProxyConfig("specs/model.yaml", { cwd: dir, env: { REINS_PROXY_KEY: "k" }, projectRoot: "." });
    expect(r.diagnostics).toEqual([]);
    expect(r.value!.model.tokenizer).toEqual({ type: "file", path: join(dir, "assets", "tokenizer.json") });
    expect(r.value!.key).toBe("k");
  });
});
