/**
 * An agent attacking the runner through MCP (issue 39), through `reins eval` in local sandboxes:
 * - one huge tools/call (megabytes of multi-byte text) to an ordinary stdio server whose answer
 *   grows it (echoed several times) ends in errors the harness sees as its tool's result
 *   (McpArgumentsTooLarge, McpResultTooLarge), never in a runner that exits 70; the server keeps
 *   serving, many large calls are recorded capped (with their sizes), and the rollout is scored;
 * - a harness that stalls past its timeout with an in-sandbox MCP server is a timeout scored 0,
 *   every time, never McpServerCrashed (the harness's timeout decides, not the server's end);
 * - the pieces: which request an unread answer was for, what a record keeps of a large value, a
 *   forbidden call whose arguments were cut cannot hide behind the cut, and the relay refuses what
 *   would pile up in the runner (a body over its limit unread, calls to a server that does not
 *   read, more than 32 open requests) and answers open calls at once when its server ends.
 */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { ResolvedCheck } from "../../src/compiler/contract/plan.js";
import { recorded, RecordBudget } from "../../src/runtime/mcp/limits.js";
import { McpRelay } from "../../src/runtime/mcp/relay.js";
import { responseOf, type ServerProcess } from "../../src/runtime/mcp/server-process.js";
import type { McpCallRecord } from "../../src/runtime/records/rollout-result.js";
import { CheckContext } from "../../src/runtime/verifiers/checks/context.js";
import { DirectoryReader } from "../../src/runtime/verifiers/directory-reader.js";
import { runChecks } from "../../src/runtime/verifiers/run-checks.js";
import { reins } from "../reins-cli.js";
import { createdJson } from "../control/helpers.js";
import { tempDir } from "../temp.js";

/** A plain stdio MCP server (no SDK): `echo` answers its `text` repeated `times` times. Answers end with the id, as the SDK writes them. */
const SERVER = `import { createInterface } from "node:readline";
const out = (m) => process.stdout.write(JSON.stringify(m) + "\\n");
createInterface({ input: process.stdin, crlfDelay: Infinity }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  let result;
  if (m.method === "initialize") result = { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "echo", version: "1" } };
  else if (m.method === "tools/list") result = { tools: [{ name: "echo", inputSchema: { type: "object" } }] };
  else if (m.method === "tools/call") { const a = m.params.arguments ?? {}; result = { content: [{ type: "text", text: String(a.text ?? "").repeat(a.times ?? 1) }] }; }
  else return out({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
  out({ result, jsonrpc: "2.0", id: m.id });
});
`;

/** The harness's MCP client over raw streamable HTTP; CALLS (JSON, or a module's default) says what to call. */
const CLIENT = `import { writeFileSync } from "node:fs";
const url = JSON.parse(process.env.MCP_SERVERS)[0].url;
const key = process.env.MCP_KEY;
async function rpc(body, session) {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: "Bearer " + key, ...(session ? { "mcp-session-id": session } : {}) };
  const r = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await r.text();
  const data = text.split("\\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
  return { status: r.status, session: r.headers.get("mcp-session-id"), message: data[0] ?? (text.startsWith("{") ? JSON.parse(text) : text) };
}
/** What the harness got, without the megabytes: HTTP status, error, isError and the text's length and start. */
function summary(r) {
  const m = r.message ?? {};
  const text = m.result?.content?.[0]?.text ?? "";
  return { status: r.status, ...(m.error ? { error: m.error } : {}), isError: m.result?.isError === true, length: text.length, start: text.slice(0, 300) };
}
const init = await rpc({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "caller", version: "1" } } });
const session = init.session;
await rpc({ jsonrpc: "2.0", method: "notifications/initialized" }, session);
const report = {};
let id = 2;
const call = async (args) => summary(await rpc({ jsonrpc: "2.0", id: id++, method: "tools/call", params: { name: "echo", arguments: args } }, session));
if (process.env.MODE === "stall") {
  report.first = await call({ text: "hello", times: 1 });
  writeFileSync("report.json", JSON.stringify(report));
  setInterval(() => undefined, 1000); // past the task's timeout
} else {
  // 1.2 M three-byte characters: 3.6 MB of arguments (under the HTTP body limit), echoed 3 times (10.8 MB)
  report.hugeArguments = await call({ text: "€".repeat(1_200_000), times: 3 });
  // 0.9 MB of arguments (allowed), echoed 6 times: 5.4 MB of answer
  report.hugeResult = await call({ text: "€".repeat(300_000), times: 6 });
  // many large calls that are allowed: 0.9 MB each way, eight times
  report.flood = [];
  for (let i = 0; i < 8; i++) report.flood.push(await call({ text: "é".repeat(450_000), times: 1 }));
  report.small = await call({ text: "hi", times: 2 });
  writeFileSync("report.json", JSON.stringify(report));
}
`;

function reinsEval(file: string, out: string) {
  const r = reins(["eval", file, "--out", out, "--json", "--quiet"], { timeout: 600_000 });
  let rollouts: Record<string, any>[] = [];
  try {
    rollouts = readFileSync(join(out, "rollouts.jsonl"), "utf8")
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch {
    // the runner died before writing any
  }
  return { code: r.code, stderr: r.stderr, rollouts };
}

/** The report.json a rollout wrote. */
function reportOf(out: string, id: string): Record<string, any> {
  return createdJson(out, id, "report.json");
}

function evalSpec(dir: string, o: { mode: string; task: string; attempts: number; timeoutSeconds: number; concurrency: number }): string {
  writeFileSync(join(dir, "echo-server.mjs"), SERVER);
  writeFileSync(join(dir, "caller.mjs"), CLIENT);
  const file = join(dir, `${o.task}.yaml`);
  writeFileSync(
    file,
    `apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: caller}
spec:
  dialect: openai-chat
  command: [node, ${join(dir, "caller.mjs")}]
  mounts: [{path: caller.mjs, sandboxPath: ${join(dir, "caller.mjs")}}]
  env: {MODE: ${o.mode}}
  mcp: {env: {MCP_SERVERS: "{{json mcpServers}}", MCP_KEY: "{{apiKey}}"}}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: ${o.task}}
spec:
  instruction: Echo things
  mcpServers: [{name: echo, where: sandbox, command: [node, echo-server.mjs], files: [{path: echo-server.mjs, from: echo-server.mjs}]}]
  verifier:
    checks:
      - fileExists: report.json
      - mcpCall: {tool: echo, argumentsInclude: {text: hi}}
  timeoutSeconds: ${o.timeoutSeconds}
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: ${o.task}}
spec:
  model: {name: qwen3}
  tasks: [{name: ${o.task}}]
  harnesses: [{name: caller}]
  attempts: ${o.attempts}
  sandbox: {provider: local, concurrency: ${o.concurrency}}
`,
  );
  return file;
}

describe("one huge MCP call, and many large ones", () => {
  let run: ReturnType<typeof reinsEval>;
  let out: string;
  beforeAll(() => {
    const dir = tempDir("reins-mcp-huge-");
    out = join(dir, "run");
    run = reinsEval(evalSpec(dir, { mode: "huge", task: "huge", attempts: 1, timeoutSeconds: 240, concurrency: 1 }), out);
  }, 600_000);

  it("end in errors the harness sees as its tool's result; the runner survives and the rollout is scored", () => {
    expect(run.code, run.stderr).toBe(0);
    expect(
      run.rollouts.map((r) => [r.status, r.reward, r.tries]),
      JSON.stringify(run.rollouts.map((r) => r.error)),
    ).toEqual([["ok", 1, 1]]);
    const report = reportOf(out, run.rollouts[0]!.id);
    expect(report.hugeArguments).toMatchObject({ status: 200, isError: true });
    expect(report.hugeArguments.start).toContain("McpArgumentsTooLarge");
    expect(report.hugeArguments.start).toContain("1048576");
    expect(report.hugeResult).toMatchObject({ status: 200, isError: true });
    expect(report.hugeResult.start).toContain("McpResultTooLarge");
    expect(report.hugeResult.start).toContain("4194304");
    // the allowed large calls went through whole, and the server still answers
    for (const f of report.flood) expect([f.isError, f.length]).toEqual([false, 450_000]);
    expect(report.small).toMatchObject({ status: 200, isError: false, start: "hihi" });
  });

  it("are recorded capped, with their sizes", () => {
    const calls = run.rollouts[0]!.mcp.calls as Record<string, any>[];
    expect(calls.map((c) => c.error?.code ?? "ok")).toEqual(["McpArgumentsTooLarge", "McpResultTooLarge", ...Array(8).fill("ok"), "ok"]);
    const [args, result, ...rest] = calls;
    // "€" is 3 bytes in UTF-8: the arguments' JSON is 3.6 MB
    expect(args!.truncated.arguments).toBeGreaterThan(3_600_000);
    expect(JSON.stringify(args!.arguments).length).toBeLessThan(70_000);
    expect(result!.truncated.result).toBeGreaterThan(5_400_000);
    expect(JSON.stringify(result!.result ?? null).length).toBeLessThan(70_000);
    for (const c of rest.slice(0, 8)) {
      expect(c.truncated).toMatchObject({ arguments: expect.any(Number), result: expect.any(Number) });
      expect(JSON.stringify(c).length).toBeLessThan(140_000);
    }
    expect(rest.at(-1)!.arguments).toEqual({ text: "hi", times: 2 });
    // 8 × 0.9 MB each way uncapped would be over 14 MB
    expect(statSync(join(out, "rollouts.jsonl")).size).toBeLessThan(2_000_000);
  });
});

describe("a harness stalled past its timeout with an in-sandbox MCP server", () => {
  it("is a timeout scored 0 every time, never McpServerCrashed", () => {
    const dir = tempDir("reins-mcp-stall-");
    const out = join(dir, "run");
    const run = reinsEval(evalSpec(dir, { mode: "stall", task: "stall", attempts: 5, timeoutSeconds: 8, concurrency: 5 }), out);
    expect(run.code, run.stderr).toBe(0);
    expect(run.rollouts.map((r) => [r.status, r.reward, r.error?.code, r.tries])).toEqual(Array(5).fill(["timeout", 0, "RolloutTimeout", 1]));
    // each made its call before it stalled
    for (const r of run.rollouts) expect(r.mcp.calls.map((c: Record<string, any>) => [c.tool, c.error?.code ?? "ok"])).toEqual([["echo", "ok"]]);
  }, 600_000);
});

describe("the pieces", () => {
  it("an answer too long to read is attributed from its beginning or its end, never a server's own request", () => {
    expect(responseOf('{"result":{"content":[{"type":"text","text":"€€', '€€"}]},"jsonrpc":"2.0","id":7}')).toEqual({ response: true, id: 7 });
    expect(responseOf('{"jsonrpc":"2.0","id":12,"result":{"content":[', "]}}")).toEqual({ response: true, id: 12 });
    expect(responseOf('{"error":{"code":-32603,"message":"xx', 'xx"}}')).toEqual({ response: true });
    // requests and notifications of the server (TypeScript's and Python's key order)
    expect(responseOf('{"method":"sampling/createMessage","params":{', '},"jsonrpc":"2.0","id":3}')).toEqual({ response: false });
    expect(responseOf('{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{', "}}")).toEqual({ response: false });
    expect(responseOf("a log line", '"id":3}')).toEqual({ response: false });
  });

  it("a record keeps small values whole, large ones with their strings cut and their size, and a tool error's isError", () => {
    expect(recorded({ path: "a.txt", content: "x" })).toEqual({ value: { path: "a.txt", content: "x" } });
    const big = recorded({ path: "a.txt", content: "é".repeat(100_000) });
    expect(big.bytes).toBe(Buffer.byteLength(JSON.stringify({ path: "a.txt", content: "é".repeat(100_000) })));
    expect((big.value as { path: string }).path).toBe("a.txt");
    expect((big.value as { content: string }).content).toMatch(/^é{1024}…\[cut: 100000 characters\]$/);
    // many small fields: only the beginning is kept, and isError survives
    const wide = recorded({ isError: true, content: Array.from({ length: 20_000 }, (_, i) => ({ type: "text", text: `line ${i}` })) });
    expect(wide.value).toMatchObject({ truncated: true, isError: true, bytes: wide.bytes });
    expect(JSON.stringify(wide.value).length).toBeLessThan(70_000);
    // a try's budget: once spent, values keep only their size
    const budget = new RecordBudget(100);
    expect(budget.keep({ a: "x".repeat(50) }).value).toEqual({ a: "x".repeat(50) });
    expect(budget.keep({ a: "y".repeat(80) })).toMatchObject({ value: { truncated: true, start: "" }, bytes: 88 });
    expect(budget.keep({ a: 1 })).toMatchObject({ value: { truncated: true, start: "" }, bytes: 7 });
  });

  it("a forbidden call (present: false) whose arguments were cut counts as made", async () => {
    const ws = tempDir("reins-mcp-check-");
    const call: McpCallRecord = {
      server: "files",
      tool: "write",
      arguments: { truncated: true, bytes: 200_000, start: '{"pad":"' },
      atMs: 1,
      latencyMs: 1,
      result: { content: [] },
      truncated: { arguments: 200_000 },
    };
    const judge = async (check: Record<string, unknown>) =>
      (await runChecks([{ type: "mcpCall", ...check } as ResolvedCheck], new CheckContext(new DirectoryReader(ws), { mcpCalls: [call] }))).results[0]!.pass;
    expect(await judge({ tool: "write", present: false, argumentsInclude: { path: "/etc/secret" } })).toBe(false);
    expect(await judge({ tool: "write", argumentsInclude: { path: "/etc/secret" } })).toBe(false);
    expect(await judge({ tool: "other", present: false, argumentsInclude: { path: "/etc/secret" } })).toBe(true);
  });
});

/** A stdio server stand-in: answers initialize and tools/list, and tools/call while `answering`; `waiting` is its unread input. */
class FakeServer {
  onmessage?: (m: unknown) => void;
  onclose?: () => void;
  onoversize?: unknown;
  exit?: Record<string, unknown>;
  exitedAt?: number;
  closing = false;
  waiting = 0;
  answering = true;
  forwarded = 0;
  readonly ended = new Promise<never>(() => undefined);
  async start(): Promise<void> {}
  stderrTail(): string {
    return "";
  }
  backlog(): number {
    return this.waiting;
  }
  async send(m: { id?: number; method?: string; params?: Record<string, unknown> }): Promise<void> {
    const reply = (result: unknown) => setImmediate(() => this.onmessage?.({ jsonrpc: "2.0", id: m.id, result }));
    if (m.method === "initialize")
      reply({ protocolVersion: m.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "fake", version: "1" } });
    else if (m.method === "tools/list") reply({ tools: [{ name: "echo", inputSchema: { type: "object" } }] });
    else if (m.method === "tools/call") {
      this.forwarded++;
      if (this.answering) reply({ content: [{ type: "text", text: "ok" }] });
    }
  }
  async close(): Promise<void> {
    this.closing = true;
  }
}

describe("the relay", () => {
  it("refuses what would pile up in the runner, and answers open calls when its server ends", async () => {
    const fake = new FakeServer();
    const calls: McpCallRecord[] = [];
    const relay = new McpRelay("fake", fake as unknown as ServerProcess, {
      allowed: null,
      startedAt: Date.now(),
      record: (c) => calls.push(c),
      maxArgumentBytes: 1000,
    });
    await relay.open(5000);
    const http = createServer((req, res) => void relay.handle(req, res));
    await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/`;
    const post = async (body: unknown, session?: string | null) => {
      const r = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(session ? { "mcp-session-id": session } : {}) },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      const text = await r.text();
      const data = text
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .map((l) => JSON.parse(l.slice(6)));
      return { status: r.status, session: r.headers.get("mcp-session-id"), message: data[0] ?? (text.startsWith("{") ? JSON.parse(text) : text) };
    };
    const call = (id: number, args: unknown) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: args } });
    try {
      const { session } = await post({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      });
      expect(session).toBeTruthy();
      expect((await post(call(2, { text: "hi" }), session)).message.result.content[0].text).toBe("ok");
      // a body over 4 × maxArgumentBytes + 64 KiB: answered 413 unread, recorded with the tool it names
      const huge = await post(call(3, { text: "x".repeat(80_000) }), session);
      expect(huge.status).toBe(413);
      expect(huge.message.error.message).toContain("McpArgumentsTooLarge");
      // a server that has not read 8 × maxArgumentBytes: the call is refused unforwarded
      fake.waiting = 9000;
      const before = fake.forwarded;
      const stuck = await post(call(4, { text: "hi" }), session);
      expect(stuck.message.result).toMatchObject({ isError: true });
      expect(stuck.message.result.content[0].text).toContain("McpServerNotReading");
      expect(fake.forwarded).toBe(before);
      fake.waiting = 0;
      // 32 open requests at most: the 33rd is answered 429 at once
      fake.answering = false;
      const open = Array.from({ length: 32 }, (_, i) => post(call(10 + i, { i }), session));
      for (let i = 0; i < 200 && fake.forwarded < before + 32; i++) await new Promise((r) => setTimeout(r, 10));
      expect(fake.forwarded).toBe(before + 32);
      const extra = await post(call(50, { i: 50 }), session);
      expect(extra.status).toBe(429);
      expect(extra.message.error.message).toContain("McpTooManyRequests");
      // the server ends: every open call is answered with an error at once
      fake.exit = { exitCode: 1, signal: null, timedOut: false };
      fake.exitedAt = Date.now();
      fake.onclose!();
      const answers = await Promise.all(open);
      for (const a of answers) expect(a.message.result).toMatchObject({ isError: true });
      expect(answers[0]!.message.result.content[0].text).toContain("exited (1) before it answered");
      // it ended while the harness ran, unless the harness had ended (or timed out) first
      expect(relay.failure(Date.now() + 1000)?.code).toBe("McpServerCrashed");
      expect(relay.failure(fake.exitedAt)).toBeUndefined();
      expect(calls.map((c) => c.error?.code ?? "ok")).toEqual(["ok", "McpArgumentsTooLarge", "McpServerNotReading", ...Array(32).fill("McpServerCrashed")]);
      expect(calls[1]).toMatchObject({ tool: "echo", truncated: { arguments: expect.any(Number) } });
    } finally {
      await relay.close();
      await new Promise((r) => http.close(r));
    }
  });
});
