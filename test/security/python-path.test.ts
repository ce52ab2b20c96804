/**
 * A spec's `python` runs as the invoking user: a Trainer's (a document, or inline in an Experiment)
 * and a vLLM engine's `serve.python`. A spec, possibly someone else's, may name only an interpreter
 * inside its project, in a Python environment reins installs (scale and metrics venvs), or on the
 * machine owner's allow-list REINS_ALLOWED_PYTHON; anything else is PythonNotAllowed, with a
 * position and a hint. The check is on the path written, `..` normalized, with the directories
 * above it resolved as the kernel would, never on the interpreter's own symlink (a venv's
 * bin/python links to a system Python).
 */
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan, validateSpecs, type Diagnostic } from "../../src/compiler/index.js";
import { reins as launch } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const SYSTEM_PYTHON = "/usr/bin/python3";

/** A project holding a venv-like .venv/bin/python (a symlink to the system Python) and a link to /usr/bin. */
function project(): string {
  const dir = tempDir("reins-python-");
  mkdirSync(join(dir, ".venv", "bin"), { recursive: true });
  symlinkSync(SYSTEM_PYTHON, join(dir, ".venv", "bin", "python"));
  symlinkSync("/usr/bin", join(dir, "sysbin"));
  return dir;
}

const trainer = (python: string) => `apiVersion: reins/v1alpha1
kind: Trainer
metadata: {name: worker}
spec:
  python: ${JSON.stringify(python)}
`;

const model = (python: string) => `apiVersion: reins/v1alpha1
kind: Model
metadata: {name: served}
spec:
  tokenizer: {type: qwen3}
  engine:
    type: vllm
    model: m
    serve: {modelPath: policy, python: ${JSON.stringify(python)}}
`;

/** An Experiment with an inline Trainer: its python on line 10. */
const experiment = (python: string) => `apiVersion: reins/v1alpha1
kind: Experiment
metadata: {name: x}
spec:
  model: {name: policy}
  tasks: [{name: t}]
  harnesses: [{name: h}]
  algorithm: {type: GRPO, groupSize: 2}
  steps: 1
  trainer: {type: torch, python: ${JSON.stringify(python)}}
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: policy}
spec:
  tokenizer: {type: qwen3}
  engine: {type: scripted, script: [{text: done}]}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: h}
spec:
  command: [sh, -c, "exit 0"]
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec:
  instruction: x
  verifier: {checks: [{fileExists: a.txt}]}
`;

function write(dir: string, text: string, name = "spec.yaml"): string {
  const file = join(dir, name);
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, text);
  return file;
}

function refusals(file: string, env: Record<string, string> = {}): Diagnostic[] {
  return validateSpecs([file], { env }).diagnostics.filter((d) => d.code === "PythonNotAllowed");
}

function reins(args: string[], env: Record<string, string> = {}) {
  return launch(args, { timeout: 60_000, env: { REINS_ALLOWED_PYTHON: "", ...env } });
}

describe("reins validate refuses a python outside the project and reins's venvs", () => {
  it.each(["/bin/sh", "../../../usr/bin/python3"])(
    "Trainer python %j: PythonNotAllowed at the field, with a hint; exit 1",
    (python) => {
      const dir = project();
      const file = write(join(dir, "specs", "deep"), trainer(python));
      const r = reins(["validate", file, "--json"]);
      expect(r.code, r.stderr).toBe(1);
      const [d] = JSON.parse(r.stdout).diagnostics.filter((x: Diagnostic) => x.code === "PythonNotAllowed");
      expect(d).toMatchObject({ code: "PythonNotAllowed", severity: "error", file, line: 5, column: 11 });
      expect(d.message).toContain(`The python ${JSON.stringify(python)} is refused: it resolves to `);
      expect(d.hint).toContain("REINS_ALLOWED_PYTHON");
      const text = reins(["validate", file]);
      expect(text.stderr).toContain(`${file}:5:11: error[PythonNotAllowed]`);
    },
    60_000,
  );

  it("a venv inside the project is accepted (its bin/python links out), and the plan carries it absolute", () => {
    const dir = project();
    expect(refusals(write(dir, trainer(".venv/bin/python")))).toEqual([]);
    expect(refusals(write(dir, trainer(join(dir, ".venv/bin/python"))))).toEqual([]);
    expect(refusals(write(dir, model(".venv/bin/python")))).toEqual([]);
    const plan = compilePlan([write(dir, experiment(".venv/bin/python"))], { env: {} });
    expect(plan.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(plan.value!.trainer!.python).toBe(join(dir, ".venv", "bin", "python"));
    // A bare name is a file beside the spec (inside the project), never looked up on PATH.
    const bare = compilePlan([write(dir, experiment("python3"))], { env: {} });
    expect(bare.value!.trainer!.python).toBe(join(dir, "python3"));
  });

  it.each([
    ["/bin/sh", "an absolute path outside"],
    ["../../usr/bin/python3", "climbing out with .."],
    [".venv/../../../../../../../../bin/sh", "climbing out through the project"],
    ["sysbin/python3", "a symlinked directory that leads out"],
    [".venv/../sysbin/../bin/python3", "a link's .. that the kernel climbs from its target"],
  ])("refused: %j (%s) as a Trainer's, a served Model's and an inline Trainer's python", (python) => {
    const dir = project();
    expect(refusals(write(dir, trainer(python)))).toMatchObject([{ line: 5 }]);
    expect(refusals(write(dir, model(python)))).toMatchObject([{ line: 9 }]);
    expect(refusals(write(dir, experiment(python)))).toMatchObject([{ line: 10 }]);
  });

  it("reins's own venvs are accepted, where the install scripts put them", () => {
    const dir = project();
    const venv = tempDir("reins-scale-venv-");
    expect(refusals(write(dir, trainer(join(venv, "bin", "python"))))).toMatchObject([{ code: "PythonNotAllowed" }]);
    expect(refusals(write(dir, trainer(join(venv, "bin", "python"))), { REINS_SCALE_PYTHON_DIR: venv })).toEqual([]);
    expect(refusals(write(dir, model(join(venv, "bin", "python"))), { REINS_METRICS_PYTHON_DIR: venv })).toEqual([]);
    expect(refusals(write(dir, trainer(join(venv, "..", "x", "bin", "python"))), { REINS_SCALE_PYTHON_DIR: venv })).toMatchObject([
      { code: "PythonNotAllowed" },
    ]);
    expect(refusals(write(dir, trainer("/root/.cache/reins/scale-python/bin/python")), { HOME: "/root" })).toEqual([]);
  });

  it("REINS_ALLOWED_PYTHON lists more interpreters or directories (reins's environment, not the spec's)", () => {
    const dir = project();
    const file = write(dir, trainer(SYSTEM_PYTHON));
    expect(refusals(file)).toHaveLength(1);
    expect(refusals(file, { REINS_ALLOWED_PYTHON: SYSTEM_PYTHON })).toEqual([]);
    expect(refusals(file, { REINS_ALLOWED_PYTHON: "/opt/py:/usr/bin" })).toEqual([]);
    expect(refusals(write(dir, trainer("/bin/sh"), "sh.yaml"), { REINS_ALLOWED_PYTHON: SYSTEM_PYTHON })).toHaveLength(1);
    // relative entries mean nothing
    expect(refusals(file, { REINS_ALLOWED_PYTHON: "usr/bin:." })).toHaveLength(1);
    expect(reins(["validate", file], { REINS_ALLOWED_PYTHON: "/usr/bin/python3" }).code).toBe(0);
  }, 60_000);
});
