// A kubernetes Sandbox's warm pool and admission settings: resolved with their defaults and given
// to the provider; kept out of the plan hash (they pace rollouts, never change a result); and a
// setting that would do nothing — a warm pool without claims, a burst without a rate — is an
// error with a hint at its line.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import { providerOptionsFor } from "../../src/runtime/sandbox/registry.js";
import { tempDir } from "../temp.js";

const spec = (sandbox: string) => `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec:
  instruction: Write hi to a.txt
  verifier: {checks: [{fileExists: a.txt}]}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: sh}
spec:
  command: [sh, -c, "echo hi > a.txt"]
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: e}
spec:
  tasks: [{name: t}]
  harnesses: [{name: sh}]
  sandbox:
${sandbox}`;

function compile(sandbox: string) {
  const dir = tempDir("reins-admission-");
  const file = join(dir, "e.yaml");
  writeFileSync(file, spec(sandbox));
  return compilePlan([file], { env: {}, cwd: dir });
}

describe("warm pools and admission of kubernetes sandboxes", () => {
  it("resolve with defaults and reach the provider's options", () => {
    const r = compile("    provider: kubernetes\n    warmPool: 4\n    kubernetes: {useSandboxClaims: true, createsPerSecond: 2.5}\n");
    expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(r.value!.sandbox.kubernetes).toMatchObject({ useSandboxClaims: true, maxStarting: 128, startTimeoutSeconds: 300, createsPerSecond: 2.5 });
    expect(providerOptionsFor(r.value!.sandbox).kubernetes).toMatchObject({
      useSandboxClaims: true,
      warmPool: 4,
      maxStarting: 128,
      readyTimeoutMs: 300_000,
      createsPerSecond: 2.5,
    });
  });

  it("are not part of the plan hash", () => {
    const base = compile("    provider: kubernetes\n    kubernetes: {useSandboxClaims: true}\n").value!;
    const paced = compile(
      "    provider: kubernetes\n    kubernetes: {useSandboxClaims: true, maxStarting: 8, createsPerSecond: 5, createBurst: 10, startTimeoutSeconds: 60}\n",
    ).value!;
    expect(paced.hash).toBe(base.hash);
    const warm = compile("    provider: kubernetes\n    warmPool: 2\n    kubernetes: {useSandboxClaims: true}\n").value!;
    expect(warm.hash).not.toBe(base.hash);
  });

  it("a warm pool without claims, or a burst without a rate, is an error at its line", () => {
    const local = compile("    provider: local\n    warmPool: 2\n");
    expect(local.diagnostics.filter((d) => d.severity === "error").map((d) => [d.code, d.line, d.hint])).toEqual([
      ["InvalidValue", 22, "Set provider: kubernetes and kubernetes.useSandboxClaims: true (agent-sandbox installed), or remove warmPool."],
    ]);
    const burst = compile("    provider: kubernetes\n    kubernetes:\n      createBurst: 10\n");
    expect(burst.diagnostics.filter((d) => d.severity === "error").map((d) => [d.code, d.line])).toEqual([["InvalidValue", 23]]);
  });

  it("refuses a creation rate that is not positive (schema)", () => {
    const r = compile("    provider: kubernetes\n    kubernetes: {createsPerSecond: 0}\n");
    expect(r.diagnostics.some((d) => d.severity === "error")).toBe(true);
  });
});
