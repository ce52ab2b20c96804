/**
 * Hosted models (engine type hosted) as a researcher uses them, against local fakes of the
 * Anthropic Messages and OpenAI Chat Completions APIs:
 * - the policy of `reins eval`: reins-agent (openai-chat, streamed) and a harness speaking
 *   anthropic-messages (streamed) reach the hosted API through the proxy's pass-through and do
 *   their tasks; the run says it is evaluation only, records each call's HTTP status and the API's
 *   usage, and the key is sent only to the API (the harness never holds it, and nothing written
 *   holds it);
 * - a rubric judge: a hosted judge of each API grades workspaces, and its scores are the rewards;
 * - the baseline of `reins synth`'s difficulty band: it tries a synthesized family's tasks through
 *   reins-agent, and its pass rate decides;
 * - a key that is not set stops the run before any rollout, naming the variable, not a stack trace.
 */
import { cpSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reinsAsync as reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { startFakeHostedApi, type FakeHostedApi } from "./fake-hosted-api.js";

const KEY = "sk-hosted-test-0123456789abcdef";

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? filesUnder(join(dir, n)) : [join(dir, n)]));
}

const TASKS = `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: say-hello}
spec:
  instruction: Write the word hello into answer.txt.
  verifier: {checks: [{fileContains: {path: answer.txt, text: hello}}]}
`;

let api: FakeHostedApi;
beforeAll(async () => {
  api = await startFakeHostedApi((which, body) => {
    // As a judge: score the rubric item 0 when the note shown says goodbye, else 1.
    const all = JSON.stringify(body);
    if (all.includes("strict, fair grader")) return { text: JSON.stringify({ "says-hello": all.includes("goodbye") ? 0 : 1 }) };
    // As an agent: write the answer, then stop once the tool's result is in the conversation.
    const answered =
      which === "openai-chat"
        ? body.messages.some((m: any) => m.role === "tool")
        : body.messages.some((m: any) => Array.isArray(m.content) && m.content.some((c: any) => c.type === "tool_result"));
    if (answered) return { text: "done" };
    // A task asking for count.txt (a synthesized family) gets "2", right for one team in three.
    return all.includes("count.txt")
      ? { tool: { name: "write_file", input: { path: "count.txt", content: "2" } } }
      : { tool: { name: "write_file", input: { path: "answer.txt", content: "hello" } } };
  });
});
afterAll(() => api.close());

describe("a hosted policy in reins eval", () => {
  it("reins-agent reaches an OpenAI-compatible API through the pass-through; the run says it is evaluation only", async () => {
    const dir = tempDir("reins-hosted-policy-");
    writeFileSync(join(dir, "tasks.yaml"), TASKS);
    writeFileSync(
      join(dir, "evaluation.yaml"),
      `apiVersion: reins/v1alpha1
kind: Model
metadata: {name: gpt}
spec:
  sampling: {temperature: 0.3, maxTokens: 500}
  engine: {type: hosted, api: openai-chat, model: test-gpt, baseUrl: "${api.base}/v1", apiKeyEnv: HOSTED_TEST_KEY}
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: hosted-eval}
spec:
  imports: [tasks.yaml]
  model: {name: gpt}
  tasks: [{name: say-hello}]
  harnesses:
    - name: reins-agent
      env: {REINS_TOOLS: write_file, REINS_MAX_TURNS: "3"}
  attempts: 2
  sandbox: {provider: local, concurrency: 2, timeoutSeconds: 60}
`,
    );
    api.seen.length = 0;
    const r = await reins(["eval", join(dir, "evaluation.yaml"), "--json", "--out", join(dir, "run")], { env: { HOSTED_TEST_KEY: KEY } });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ rollouts: 2, meanReward: 1 });
    expect(out.evaluationOnly).toMatch(/hosted openai-chat model \(test-gpt\).*cannot train/);
    expect(out.fidelity).toBeUndefined();
    // Two calls per rollout (write, then done), each to the API with the Model's name and sampling and the API key only.
    expect(api.seen.filter((s) => s.api === "openai-chat")).toHaveLength(4);
    for (const s of api.seen) {
      expect(s.body).toMatchObject({ model: "test-gpt", temperature: 0.3, stream: true });
      expect(s.body.max_tokens ?? s.body.max_completion_tokens).toBeLessThanOrEqual(500);
      expect(s.headers.authorization).toBe(`Bearer ${KEY}`);
    }
    const calls = readFileSync(join(out.runDir, "calls.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(calls).toHaveLength(4);
    for (const c of calls) {
      expect(c).toMatchObject({
        hosted: { api: "openai-chat", model: "test-gpt", status: 200, inputTokens: 57, outputTokens: 9 },
        promptIds: [],
        completionIds: [],
        weightsVersion: "hosted:test-gpt",
      });
      expect(c.error).toBeUndefined();
    }
    for (const f of filesUnder(dir)) expect(readFileSync(f, "utf8"), f).not.toContain(KEY);
    expect(r.stdout + r.stderr).not.toContain(KEY);
  }, 300_000);

  it("a harness speaking anthropic-messages gets the API's stream back as sent; the printed summary says evaluation only", async () => {
    const dir = tempDir("reins-hosted-anthropic-");
    writeFileSync(join(dir, "tasks.yaml"), TASKS);
    // A small harness: one streamed Messages call; the tool_use input it gets back is written to the workspace.
    writeFileSync(
      join(dir, "harness.mjs"),
      `const res = await fetch(process.env.BASE + "/v1/messages", {
  method: "POST",
  headers: { "content-type": "application/json", "x-api-key": process.env.KEY, "anthropic-version": "2023-06-01" },
  body: JSON.stringify({ model: "claude-anything", max_tokens: 4096, stream: true, messages: [{ role: "user", content: process.argv[2] }],
    tools: [{ name: "write_file", description: "write", input_schema: { type: "object" } }] }),
});
const text = await res.text();
const json = text.split("\\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
const input = JSON.parse(json.filter((e) => e.delta?.type === "input_json_delta").map((e) => e.delta.partial_json).join(""));
(await import("node:fs")).writeFileSync(input.path, input.content);
`,
    );
    writeFileSync(
      join(dir, "evaluation.yaml"),
      `apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: one-call}
spec:
  dialect: anthropic-messages
  command: ["{{node}}", "${join(dir, "harness.mjs")}", "{{instruction}}"]
  env: {BASE: "{{baseUrl}}", KEY: "{{apiKey}}"}
  mounts: [{path: harness.mjs, sandboxPath: "${join(dir, "harness.mjs")}"}]
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: claude}
spec:
  sampling: {maxTokens: 1000}
  engine: {type: hosted, api: anthropic-messages, model: test-claude, baseUrl: "${api.base}", apiKeyEnv: HOSTED_TEST_KEY}
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: hosted-anthropic}
spec:
  imports: [tasks.yaml]
  model: {name: claude}
  tasks: [{name: say-hello}]
  harnesses: [{name: one-call}]
  sandbox: {provider: local, timeoutSeconds: 60}
`,
    );
    api.seen.length = 0;
    const r = await reins(["eval", join(dir, "evaluation.yaml"), "--out", join(dir, "run")], { env: { HOSTED_TEST_KEY: KEY } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("evaluation only: the policy claude is a hosted anthropic-messages model (test-claude)");
    expect(api.seen).toHaveLength(1);
    expect(api.seen[0]!.body).toMatchObject({ model: "test-claude", max_tokens: 1000, stream: true });
    expect(api.seen[0]!.headers["x-api-key"]).toBe(KEY);
    expect(api.seen[0]!.headers["anthropic-version"]).toBe("2023-06-01");
    const runDir = /run directory: (\S+)/.exec(r.stdout)![1]!;
    const rollouts = readFileSync(join(runDir, "rollouts.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rollouts.map((x) => x.reward)).toEqual([1]);
    const [call] = readFileSync(join(runDir, "calls.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(call).toMatchObject({ stream: true, hosted: { api: "anthropic-messages", status: 200, inputTokens: 57, outputTokens: 9 } });
    for (const f of filesUnder(dir)) expect(readFileSync(f, "utf8"), f).not.toContain(KEY);
  }, 300_000);

  it("without the key the run stops before any rollout, naming the variable, and nothing reaches the API", async () => {
    const dir = tempDir("reins-hosted-nokey-");
    writeFileSync(join(dir, "tasks.yaml"), TASKS);
    writeFileSync(
      join(dir, "evaluation.yaml"),
      `apiVersion: reins/v1alpha1
kind: Model
metadata: {name: gpt}
spec:
  engine: {type: hosted, api: openai-chat, model: test-gpt, baseUrl: "${api.base}/v1", apiKeyEnv: HOSTED_TEST_ABSENT_KEY}
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: hosted-nokey}
spec:
  imports: [tasks.yaml]
  model: {name: gpt}
  tasks: [{name: say-hello}]
  harnesses: [{name: reins-agent, env: {REINS_MAX_TURNS: "2"}}]
  sandbox: {provider: local, timeoutSeconds: 60}
`,
    );
    api.seen.length = 0;
    const r = await reins(["eval", join(dir, "evaluation.yaml"), "--json", "--out", join(dir, "run")]);
    expect(r.code).toBe(1);
    // With --json the problem is data on stdout.
    expect(JSON.parse(r.stdout)).toMatchObject({
      problems: [{ code: "HostedKeyMissing", message: expect.stringContaining("HOSTED_TEST_ABSENT_KEY (Model gpt). Nothing was run.") }],
    });
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(api.seen).toEqual([]);
    expect(existsSync(join(dir, "run", "rollouts.jsonl")) ? readFileSync(join(dir, "run", "rollouts.jsonl"), "utf8") : "").toBe("");
  }, 300_000);
});

describe("a hosted rubric judge", () => {
  for (const which of ["anthropic-messages", "openai-chat"] as const) {
    it(`${which}: grades each workspace, and its scores are the rewards`, async () => {
      const dir = tempDir("reins-hosted-judge-");
      const baseUrl = which === "anthropic-messages" ? api.base : `${api.base}/v1`;
      writeFileSync(
        join(dir, "evaluation.yaml"),
        `apiVersion: reins/v1alpha1
kind: Model
metadata: {name: grader}
spec:
  engine: {type: hosted, api: ${which}, model: test-judge, baseUrl: "${baseUrl}", apiKeyEnv: HOSTED_TEST_KEY}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: writer}
spec:
  command: [sh, -c, 'printf "%s" "$1" > note.txt', writer, "{{instruction}}"]
---
apiVersion: reins/v1alpha1
kind: Verifier
metadata: {name: greets}
spec:
  rubric:
    judge: grader
    files: [note.txt]
    items: [{id: says-hello, criterion: The note greets the reader with hello.}]
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: hello}
spec: {instruction: hello, verifier: {ref: greets}}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: goodbye}
spec: {instruction: goodbye, verifier: {ref: greets}}
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: judged}
spec:
  tasks: [{name: hello}, {name: goodbye}]
  harnesses: [{name: writer}]
  sandbox: {provider: local, timeoutSeconds: 60}
`,
      );
      api.seen.length = 0;
      const r = await reins(["eval", join(dir, "evaluation.yaml"), "--json", "--out", join(dir, "run")], { env: { HOSTED_TEST_KEY: KEY } });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      const rollouts = readFileSync(join(out.runDir, "rollouts.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(rollouts.map((x) => x.reward).sort()).toEqual([0, 1]);
      expect(api.seen).toHaveLength(2);
      for (const s of api.seen) {
        expect(s.api).toBe(which);
        expect(s.body).toMatchObject({ model: "test-judge", temperature: 0 });
      }
      for (const f of filesUnder(dir)) expect(readFileSync(f, "utf8"), f).not.toContain(KEY);
    }, 300_000);
  }
});

describe("a hosted baseline for reins synth's difficulty band", () => {
  it("tries each task through reins-agent; its pass rate keeps the family", async () => {
    const dir = tempDir("reins-hosted-band-");
    cpSync(resolve("examples/synth/answers"), join(dir, "answers"), { recursive: true });
    writeFileSync(
      join(dir, "synth.yaml"),
      `apiVersion: reins/v1alpha1
kind: Synthesis
metadata: {name: banded}
spec:
  personas: [a support lead]
  scenarios: [handing over the queue]
  skills: [count records in a CSV]
  count: 1
  generator: {scripted: {answers: [answers/02-open-tickets.md]}}
  validation: {attempts: 1}
  gates:
    mutations: false
    difficulty: {model: gpt, attempts: 1}
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: gpt}
spec:
  engine: {type: hosted, api: openai-chat, model: test-gpt, baseUrl: "${api.base}/v1", apiKeyEnv: HOSTED_TEST_KEY}
`,
    );
    api.seen.length = 0;
    const r = await reins(["synth", join(dir, "synth.yaml"), "--out", join(dir, "out"), "--json"], { env: { HOSTED_TEST_KEY: KEY } });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ kept: 1, families: ["open-ticket-count"] });
    const report = JSON.parse(readFileSync(join(dir, "out", "synth-report.json"), "utf8"));
    expect(report.candidateReports[0].gates.at(-1)).toEqual({
      gate: "difficulty",
      passed: true,
      reason: "the baseline gpt passed 1/3 tries (0.33), within the band [0.1, 0.9]",
    });
    // Three tasks, two calls each (write, then done), all to the hosted API with its key.
    expect(api.seen).toHaveLength(6);
    for (const s of api.seen) expect(s.headers.authorization).toBe(`Bearer ${KEY}`);
    for (const f of filesUnder(join(dir, "out"))) expect(readFileSync(f, "utf8"), f).not.toContain(KEY);
  }, 300_000);
});
