/**
 * Weights the engine cannot load (here: the trainer publishes a model.onnx truncated to half, as a
 * full disk or a broken copy would leave it) stop the run with a plain message and exit 1: the
 * previous version keeps serving, no call names the bad version, and the message says how to
 * resume; once the cause is gone, the resumed run completes. The fault is injected from the test only: the Trainer's `python` is a wrapper that runs
 * the real worker with its save_weights patched to truncate the second version it publishes, before
 * answering (so there is no race with the engine's reload), once.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { STACK_TRACE, editSpec, events, experiment, jsonl } from "./helpers.js";

function truncatingPython(dir: string, marker: string): string {
  const file = join(dir, "python-truncating-weights");
  writeFileSync(
    file,
    `#!/usr/bin/python3
# The real interpreter, except for the trainer worker: its 2nd save_weights truncates model.onnx
# (once: the marker file records the damaged version).
import os, runpy, sys
args = sys.argv[1:]
if args[:2] != ["-m", "trainers.torch.worker"]:
    os.execv("/usr/bin/python3", ["/usr/bin/python3", *args])
from trainers.torch import trainer
original = trainer.Trainer.save_weights
published = []
def save_weights(self, req):
    out = original(self, req)
    published.append(out["version"])
    if len(published) == 2 and not os.path.exists(${JSON.stringify(marker)}):
        path = os.path.join(out["dir"], "model.onnx")
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
        with open(${JSON.stringify(marker)}, "w") as f:
            f.write(out["version"])
    return out
trainer.Trainer.save_weights = save_weights
sys.argv = ["trainers.torch.worker", *args[2:]]
runpy.run_module("trainers.torch.worker", run_name="__main__", alter_sys=True)
`,
  );
  chmodSync(file, 0o755);
  return file;
}

describe("reins run when the engine cannot load the new weights", () => {
  it("stops with error[EngineReloadFailed] and exit 1; the previous version served every call", () => {
    const dir = tempDir("reins-engine-reload-");
    const marker = join(dir, "corrupted-version");
    const file = experiment(dir);
    // Without held-out evaluations; zero-variance groups kept and an entropy bonus, so the first
    // step changes the weights (a new version) even when the short SFT leaves every reward at 0.
    editSpec(file, [
      [/ {2}heldOut:\n {4}- labels: \{[^}]*\}\n/, ""],
      [/ {4}learningRate: ([^\n]+)\n/, "    learningRate: $1\n    entropyCoef: 0.01\n"],
      [/dropZeroVariance: true/, "dropZeroVariance: false"],
      [/ {2}trainer: \{name: torch-cpu\}/, `  trainer: {type: torch, mode: local, device: cpu, python: ${truncatingPython(join(dir, "spec"), marker)}}`],
    ]);
    const out = join(dir, "run");
    const r = reins(["run", file, "--out", out], { timeout: 300_000 });
    expect(r.code, r.stderr).toBe(1);
    expect(existsSync(marker), "the wrapper truncated a published model.onnx").toBe(true);
    const bad = readFileSync(marker, "utf8").trim();
    const sft = events(out).find((e) => e.type === "checkpoint" && e.phase === "sft");
    expect(sft, "SFT published its weights").toBeTruthy();
    expect(bad).not.toBe(sft.version);

    expect(r.stderr).toMatch(
      new RegExp(`error\\[EngineReloadFailed\\]: The engine could not load the new weights ${bad}: onnxruntime could not load .*model\\.onnx`),
    );
    expect(r.stderr).toContain(`The previous weights ${sft.version} keep serving; nothing was checkpointed for this step.`);
    expect(r.stderr).toContain(`The unloadable directory was moved to ${join(out, "trainer", "weights", bad)}.unloadable-1`);
    expect(r.stderr).toContain(`--resume ${out}`);
    expect(r.stderr).not.toMatch(STACK_TRACE);
    // Nothing after the failed reload: no checkpoint of the step, no further sampling.
    const ev = events(out);
    expect(ev.filter((e) => e.type === "checkpoint").map((e) => e.phase)).toEqual(["sft"]);
    expect(ev.at(-1)).toMatchObject({ type: "run-stopped", code: "EngineReloadFailed" });
    expect(jsonl(out, "metrics.jsonl")).toEqual([]);
    // The previous version was serving: every call of the policy names it, none the bad one.
    const calls = jsonl(out, "calls.jsonl").filter((c) => !String(c.rolloutId).startsWith("sft-"));
    expect(calls.length).toBeGreaterThan(0);
    expect(new Set(calls.map((c) => c.weightsVersion))).toEqual(new Set([sft.version]));
    expect(calls.some((c) => c.weightsVersion === bad)).toBe(false);

    // The cause is gone (the wrapper damages one version only), so the resumed run exports step 1's
    // weights again, loads them and completes.
    const resumed = reins(["run", "--resume", out, "--json", "--quiet"], { timeout: 300_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).steps).toBe(3);
    expect(events(out).filter((e) => e.type === "checkpoint" && e.phase === "step").length).toBe(3);
  }, 300_000);
});
