/**
 * An Experiment that asks for TensorBoard or W&B on a machine without the metrics Python stops
 * before anything is sampled, with error[MetricsSinkUnavailable], the way to install it, exit 1
 * and no stack trace: a Python that does not exist, and one without the packages (Debian's).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editSpec, experiment, jsonl, STACK_TRACE } from "../control/helpers.js";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

function runWith(python: string, metrics: string) {
  const dir = tempDir("reins-sink-unavailable-");
  const file = experiment(dir);
  editSpec(file, [[/ {2}seed: 7\n/, `  seed: 7\n  metrics: ${metrics}\n`]]);
  const out = join(dir, "run");
  const r = reins(["run", file, "--out", out], { timeout: 300_000, env: { REINS_METRICS_PYTHON: python } });
  return { r, out };
}

describe("spec.metrics without the metrics Python", () => {
  it("a Python that does not exist: stops at once, says how to install it", () => {
    const { r, out } = runWith("/nonexistent/metrics-python/bin/python", "{tensorboard: true}");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[MetricsSinkUnavailable]");
    expect(r.stderr).toContain("spec.metrics asks for TensorBoard, but the metrics Python /nonexistent/metrics-python/bin/python does not exist");
    expect(r.stderr).toContain("bash scripts/install-metrics-python.sh");
    expect(r.stderr).not.toMatch(STACK_TRACE);
    expect(jsonl(out, "rollouts.jsonl")).toEqual([]); // nothing sampled
  }, 300_000);

  it("a Python without tensorboardX (Debian's python3): names the missing package", () => {
    const { r, out } = runWith("/usr/bin/python3", "{tensorboard: true, wandb: {project: p}}");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[MetricsSinkUnavailable]");
    expect(r.stderr).toContain("spec.metrics asks for TensorBoard and W&B, but the metrics Python /usr/bin/python3 has no tensorboardX package");
    expect(r.stderr).not.toMatch(STACK_TRACE);
    expect(jsonl(out, "rollouts.jsonl")).toEqual([]); // nothing sampled
  }, 300_000);
});
