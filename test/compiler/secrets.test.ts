/**
 * Secrets stay references until the last moment: `${VAR}` in a Harness's env and homeFiles (and the
 * env an Evaluation adds to a harness) is never substituted by the compiler, so plan.json and the run
 * directory hold the reference; the runtime reads the value when it launches the harness.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const KEY = "sk-live-7f3a9c2e51d84b06";
const PASS = "p4ss-w0rd-91e2c7";
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

function specs(dir: string): string {
  const file = join(dir, "eval.yaml");
  writeFileSync(
    file,
    `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: secrets}
spec:
  tasks: [{name: echo-secrets}]
  harnesses:
    - name: echo
      env: {EXTRA_PASS: "\${DB_PASS}"}
  sandbox: {provider: local, retries: 0}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: echo}
spec:
  # Writes what it was given into its workspace (hashing happens in the verifier).
  command: [sh, -c, 'printf %s "$MY_API_KEY" > key.txt; printf %s "$EXTRA_PASS" > pass.txt; cp "$HOME/.config/echo.ini" config.txt']
  env:
    MY_API_KEY: "\${MY_API_KEY}"
    DB_PASS: "\${DB_PASS}"
    REGION: "\${REINS_TEST_REGION:-eu}"
  homeFiles:
    - path: .config/echo.ini
      content: "token=\${MY_API_KEY}\\nliteral=$\${NOT_READ}\\n"
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: echo-secrets}
spec:
  instruction: "Echo the secrets for $\${REINS_TEST_WHO}"
  verifier:
    checks:
      - commandExitsZero: 'test "$(sha256sum < key.txt | cut -c1-64)" = ${sha(KEY)}'
      - commandExitsZero: 'test "$(sha256sum < pass.txt | cut -c1-64)" = ${sha(PASS)}'
      - commandExitsZero: 'test "$(sha256sum < config.txt | cut -c1-64)" = ${sha(`token=${KEY}\nliteral=\${NOT_READ}\n`)}'
  timeoutSeconds: 60
`,
  );
  return file;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe("secrets in harness env and homeFiles", () => {
  it("stay references in the plan; $${...} elsewhere is a literal ${...}", () => {
    const dir = tempDir("reins-secrets-");
    const r = compilePlan([specs(dir)], { cwd: dir, env: { MY_API_KEY: KEY, DB_PASS: PASS, REINS_TEST_WHO: "ada" } });
    expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const plan = r.value!;
    const text = JSON.stringify(plan);
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(PASS);
    const h = plan.harnesses[0]!;
    expect(h.env).toEqual({ MY_API_KEY: "${MY_API_KEY}", DB_PASS: "${DB_PASS}", REGION: "${REINS_TEST_REGION:-eu}", EXTRA_PASS: "${DB_PASS}" });
    expect(h.homeFiles[0]!.content).toBe("token=${MY_API_KEY}\nliteral=$${NOT_READ}\n");
    expect(plan.tasks[0]!.instruction).toBe("Echo the secrets for ${REINS_TEST_WHO}");
  });

  it("do not need to be set when the plan is made, and the plan hash does not depend on their values", () => {
    const dir = tempDir("reins-secrets-");
    const file = specs(dir);
    const a = compilePlan([file], { cwd: dir, env: { REINS_TEST_WHO: "ada" } });
    const b = compilePlan([file], { cwd: dir, env: { REINS_TEST_WHO: "ada", MY_API_KEY: "other", DB_PASS: "other" } });
    expect(a.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(a.value!.hash).toBe(b.value!.hash);
  });

  it("reach the harness through `reins eval`, and nothing in the run directory holds their values", () => {
    const dir = tempDir("reins-secrets-");
    const file = specs(dir);
    const out = join(dir, "run");
    const env = { MY_API_KEY: KEY, DB_PASS: PASS, REINS_TEST_WHO: "ada" };
    const r = reins(["eval", file, "--out", out, "--json", "--quiet"], { timeout: 120_000, env });
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.infraFailures).toBe(0);
    expect(summary.meanReward).toBe(1);
    expect(readFileSync(join(out, "plan.json"), "utf8")).toContain("${MY_API_KEY}");
    const files = filesUnder(out);
    expect(files.length).toBeGreaterThan(2);
    for (const f of files) {
      const bytes = readFileSync(f).toString("latin1");
      expect(bytes.includes(KEY), f).toBe(false);
      expect(bytes.includes(PASS), f).toBe(false);
    }
    expect(r.stdout + r.stderr).not.toContain(KEY);

    // The same plan without a variable in reins's environment stops before any rollout (the
    // ReinsError's code, HarnessVariableUnset, is checked in test/harness/launch-secrets.test.ts).
    const missing = reins(["eval", file, "--out", join(dir, "run2"), "--quiet"], { timeout: 60_000, env: { ...env, DB_PASS: undefined } });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("needs ${DB_PASS} from reins's environment");
    const events = join(dir, "run2", "events.jsonl");
    expect(existsSync(events) ? readFileSync(events, "utf8") : "").not.toContain("rollout-started");
  }, 180_000);
});
