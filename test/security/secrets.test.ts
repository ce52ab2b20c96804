/**
 * Secrets never written. A harness's env refers to `${DB_PASS}` and `${DATABASE_URL}` (names that
 * match no KEY/TOKEN/SECRET/PASSWORD pattern); the harness prints its environment to stderr,
 * writes it where the verifier quotes it back, and crashes before its first model call. The whole
 * run directory and everything `reins eval` printed are searched for the values (and their
 * URL-encoded and base64 forms): nothing. The references `${DB_PASS}` stand in their place.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SecretScrubber, resolvedSecrets } from "../../src/runtime/harness/secrets.js";
import { reinsAsync } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const DB_PASS = "hunter2-Zq81x";
const DATABASE_URL = "postgres://app:pw-77Kx@db.internal:5432/prod";

function forms(value: string): string[] {
  const b64 = Buffer.from(value).toString("base64");
  return [value, encodeURIComponent(value), b64, b64.replace(/=+$/, "")];
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

const SPECS = `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: leaky}
spec:
  model: {name: m}
  tasks: [{labels: {suite: s}}]
  harnesses: [{name: crasher}, {name: printer}]
  sandbox: {provider: local, concurrency: 2, retries: 1}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: crasher}
spec:
  dialect: openai-chat
  command: ["sh", "-c", "env >&2; echo \\"db=$DB_PASS url=$DATABASE_URL\\" >&2; exit 3"]
  env: {DB_PASS: "\${DB_PASS}", DATABASE_URL: "\${DATABASE_URL}"}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: printer}
spec:
  command: ["sh", "-c", "env > env.txt; printf '%s' \\"$DB_PASS\\" | base64 > b64.txt; printf '%s %s' \\"$DB_PASS\\" \\"$DATABASE_URL\\" > answer.txt; env >&2; exit 1"]
  env: {DB_PASS: "\${DB_PASS}", DATABASE_URL: "\${DATABASE_URL}"}
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: m}
spec:
  tokenizer: {type: qwen3}
  engine: {type: scripted, script: [{text: done}]}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: leak, labels: {suite: s}}
spec:
  instruction: Write the answer
  verifier:
    checks:
      - fileEquals: {path: answer.txt, content: "42"}
      - fileContains: {path: env.txt, text: "nothing like this"}
    script:
      command: ["sh", "-c", "cat answer.txt b64.txt; cat answer.txt >&2; exit 2"]
      timeoutSeconds: 30
  timeoutSeconds: 60
`;

describe("secrets never written", () => {
  it("a harness that prints its env and crashes leaves no resolved value in the run directory or the output", async () => {
    const dir = tempDir("reins-secrets-");
    const spec = join(dir, "specs.yaml");
    await import("node:fs").then((fs) => fs.writeFileSync(spec, SPECS));
    const runDir = join(dir, "run");
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, TMPDIR: process.env.TMPDIR ?? "/tmp", DB_PASS, DATABASE_URL };
    const r = await reinsAsync(["eval", spec, "--out", runDir, "--json"], { env, bareEnv: true, cwd: dir });
    const output = `${r.stdout}\n${r.stderr}`;
    const results = readFileSync(join(runDir, "rollouts.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    // The attacks did happen: the crash's stderr tail and the verifier's quotes are recorded, scrubbed.
    const crasher = results.find((x) => x.harness === "crasher")!;
    expect(crasher.error.code).toBe("HarnessCrashedEarly");
    expect(crasher.error.message).toContain("db=${DB_PASS} url=${DATABASE_URL}");
    const printer = results.find((x) => x.harness === "printer")!;
    expect(printer.status).toBe("verifier-error");
    expect(JSON.stringify(printer.verifier)).toContain("${DB_PASS} ${DATABASE_URL}");

    const files = filesUnder(runDir);
    expect(files.map((f) => f.slice(runDir.length + 1))).toEqual(expect.arrayContaining(["plan.json", "rollouts.jsonl", "events.jsonl", "summary.json"]));
    for (const value of [DB_PASS, DATABASE_URL]) {
      for (const form of forms(value)) {
        for (const f of files) expect(readFileSync(f, "latin1").includes(form), `${form} in ${f}`).toBe(false);
        expect(output.includes(form), `${form} in the output`).toBe(false);
      }
    }
  }, 120_000);

  it("the scrubber replaces values, their URL-encoded and base64 forms, and leaves short values and other text alone", () => {
    const harness = {
      env: { A: "${DB_PASS}", B: "x-${DATABASE_URL:-none}", C: "$${LITERAL}", D: "${SHORT}" },
      homeFiles: [{ path: ".rc", content: "token=${TOK}" }],
    };
    const secrets = resolvedSecrets([harness as never], { DB_PASS, DATABASE_URL, LITERAL: "literal-value", SHORT: "abc", TOK: "tok-9999" });
    expect(secrets.map((s) => s.name).sort()).toEqual(["DATABASE_URL", "DB_PASS", "TOK"]);
    const s = new SecretScrubber(secrets);
    const text = `pass ${DB_PASS}; url ${encodeURIComponent(DATABASE_URL)}; b64 ${Buffer.from(DB_PASS).toString("base64")}; abc literal-value tok-9999`;
    expect(s.text(text)).toBe("pass ${DB_PASS}; url ${DATABASE_URL}; b64 ${DB_PASS}; abc literal-value ${TOK}");
    const value = { ids: [1, 2, 3], error: { message: `boom ${DB_PASS}` }, [`k-${DB_PASS}`]: true };
    expect(s.value(value)).toEqual({ ids: [1, 2, 3], error: { message: "boom ${DB_PASS}" }, "k-${DB_PASS}": true });
    const clean = { a: "nothing here", n: [1, 2] };
    expect(s.value(clean)).toBe(clean);
  });
});
