/**
 * The proxy survives its rollouts: each attack a policy can make on its own proxy path, on the
 * real proxy (loopback, scripted engine, the real Qwen3 tokenizer), refused quickly in the
 * dialect's shape while the process keeps serving everyone else.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import net from "node:net";
import { setPriority } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadProxyConfig } from "../../src/compiler/index.js";
import type { ProxyHandle, RolloutRegistration } from "../../src/runtime/proxy/api.js";
import type { ProxyLimits } from "../../src/runtime/proxy/limits.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import type { CallRecord } from "../../src/runtime/records/index.js";
import { createSocketBridge } from "../../src/runtime/sandbox/socket-bridge.js";
import { scriptedModel } from "../proxy/helpers.js";
import { spawnReins } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { scriptedModelYaml } from "../specs.js";

const MB = 1024 * 1024;
const many = Array.from({ length: 400 }, () => ({ text: "ok" }));

interface Reply {
  status: number;
  json?: any;
  ms: number;
  /** The connection broke before an answer (refused, reset). */
  broken?: string;
}

/** POST a body as a client would; an answer that comes while the body is still being written counts. */
function post(url: string, key: string, body: string | Buffer, opts: { socketPath?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const t0 = performance.now();
  const payload = typeof body === "string" ? Buffer.from(body) : body;
  return new Promise((resolve) => {
    let done = false;
    const settle = (r: Omit<Reply, "ms">) => {
      if (done) return;
      done = true;
      resolve({ ...r, ms: performance.now() - t0 });
    };
    const u = new URL(url);
    const req = request(
      {
        ...(opts.socketPath ? { socketPath: opts.socketPath } : { host: u.hostname, port: u.port }),
        path: u.pathname,
        method: "POST",
        agent: false,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": String(payload.length), ...opts.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", () => undefined);
        res.on("close", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          settle({ status: res.statusCode ?? 0, json });
        });
      },
    );
    req.on("error", (err) => setTimeout(() => settle({ status: 0, broken: err.message }), 200));
    req.end(payload);
  });
}

const chat = (messages: unknown[]) => JSON.stringify({ model: "m", messages });
const honestChat = chat([{ role: "user", content: "Write hello.txt containing hi." }]);
const chatUrl = (r: RolloutRegistration) => `${r.baseUrl}/v1/chat/completions`;

/** The longest stretch the event loop was blocked while `work` ran (the proxy shares this thread). */
async function longestStall<T>(work: () => Promise<T>): Promise<{ value: T; stallMs: number }> {
  let last = performance.now();
  let worst = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 10);
  try {
    const value = await work();
    return { value, stallMs: worst };
  } finally {
    clearInterval(tick);
  }
}

/** The fastest of a few honest calls alone: the baseline the fairness bound adds a second to. */
async function loneLatency(r: RolloutRegistration): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const reply = await post(chatUrl(r), r.apiKey, honestChat);
    expect(reply.status).toBe(200);
    times.push(reply.ms);
  }
  return Math.max(...times.sort((a, b) => a - b).slice(0, 3));
}

function recordLines(file: string): { line: string; record: CallRecord }[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((line) => ({ line, record: JSON.parse(line) as CallRecord }));
}

describe("the proxy survives its rollouts", () => {
  let proxy: ProxyHandle;
  let recordFile: string;
  const limits: Partial<ProxyLimits> = { bodyTimeoutMs: 1500, idleTimeoutMs: 2000, maxRequestsPerRollout: 6 };

  beforeAll(async () => {
    recordFile = join(tempDir("reins-proxy-sec-"), "calls.jsonl");
    proxy = await startProxy({ model: scriptedModel(many, { maxContextTokens: 8192 }), recordFile, limits });
  });
  afterAll(() => proxy.close());

  it("a. a 21 MB request with 20 MB of one character in tool-call arguments is refused at once, and the proxy keeps serving", async () => {
    const r = proxy.registerRollout("attack-a");
    const args = JSON.stringify({ path: "x", content: "A".repeat(20 * MB) });
    const huge = chat([
      { role: "user", content: "hi" },
      { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "write", arguments: args } }] },
      { role: "tool", tool_call_id: "c1", content: "done" },
    ]);
    expect(huge.length).toBeGreaterThan(20 * MB);
    const { value: big, stallMs } = await longestStall(() => post(chatUrl(r), r.apiKey, huge));
    expect(big.status).toBe(413);
    expect(big.json.error).toMatchObject({ type: "invalid_request_error", code: "request_too_large" });
    // Under the body limit, the argument itself is over its limit: refused before any rendering.
    const under = chat([
      { role: "user", content: "hi" },
      { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "write", arguments: "A".repeat(12 * MB) } }] },
    ]);
    const arg = await post(chatUrl(r), r.apiKey, under);
    expect(arg.status).toBe(413);
    expect(arg.json.error.message).toMatch(/arguments of tool call "write" have 12582912 characters; the limit is 131072/);
    // The same attack in the Anthropic dialect: its own error shape.
    const anth = await post(
      `${r.baseUrl}/v1/messages`,
      r.apiKey,
      JSON.stringify({
        model: "m",
        max_tokens: 10,
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "write", input: { content: "A".repeat(4 * MB) } }] },
        ],
      }),
    );
    expect(anth.status).toBe(413);
    expect(anth.json).toEqual({ type: "error", error: { type: "request_too_large", message: expect.stringMatching(/tool call "write"/) } });
    // One message over its limit (131072 characters for an 8K context): refused the same way.
    const msg = await post(chatUrl(r), r.apiKey, chat([{ role: "user", content: "x".repeat(200_000) }]));
    expect(msg.status).toBe(413);
    expect(msg.json.error.message).toMatch(/messages\[0\] \(user\) has 200000 characters; the limit is 131072/);
    expect(big.ms + arg.ms + anth.ms + msg.ms).toBeLessThan(5000);
    expect(stallMs).toBeLessThan(1000);
    // Alive, and the attacker's own honest call still works.
    expect((await post(chatUrl(r), r.apiKey, honestChat)).status).toBe(200);
    const codes = proxy.records("attack-a").map((c) => c.error?.code);
    expect(codes).toEqual(["RequestBodyTooLarge", "ToolArgumentsTooLarge", "ToolArgumentsTooLarge", "MessageTooLarge", undefined]);
  });

  it("b. a prompt too long for the context is refused on its characters before tokenizing; one that must be tokenized does not stall the proxy", async () => {
    const r = proxy.registerRollout("attack-b");
    const other = proxy.registerRollout("bystander-b");
    const lone = await loneLatency(other);
    // 4 MB of prompt in messages each under the message limit: refused without tokenizing.
    const fourMb = chat(Array.from({ length: 40 }, (_, i) => ({ role: "user", content: `${i} ${"lorem ipsum dolor ".repeat(5800)}` })));
    expect(fourMb.length).toBeGreaterThan(4_000_000);
    const { value: refused, stallMs: refusedStall } = await longestStall(() => post(chatUrl(r), r.apiKey, fourMb));
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatchObject({ code: "context_length_exceeded", message: expect.stringMatching(/new characters cannot fit/) });
    expect(refused.ms).toBeLessThan(3000);
    expect(refusedStall).toBeLessThan(1000);
    // 120K characters of one letter: within the character bound (8192 × 16), the slowest text for
    // the tokenizer (~2 s); tokenized off the event loop, then refused on its 15K tokens.
    const slow = chat([{ role: "user", content: "a".repeat(120_000) }]);
    const { value: both, stallMs } = await longestStall(() =>
      Promise.all([
        post(chatUrl(r), r.apiKey, slow),
        new Promise<Reply>((resolve) => setTimeout(() => resolve(post(chatUrl(other), other.apiKey, honestChat)), 100)),
      ]),
    );
    const [tokenized, bystander] = both;
    expect(tokenized.status).toBe(400);
    expect(tokenized.json.error.message).toMatch(/prompt is too long: \d+ tokens > 8191 maximum/);
    expect(bystander.status).toBe(200);
    expect(bystander.ms).toBeLessThan(lone + 1000);
    expect(stallMs).toBeLessThan(1000);
    expect(proxy.records("attack-b").map((c) => c.error?.code)).toEqual(["PromptTooLong", "ContextLengthExceeded"]);
  });

  it("c. rejected calls are recorded without their prompt ids: counts and the error, in a short line", async () => {
    const lines = recordLines(recordFile).filter((l) => l.record.rolloutId === "attack-b");
    expect(lines).toHaveLength(2);
    for (const { line, record } of lines) {
      expect(line.length).toBeLessThan(2000);
      expect(record.promptIds).toEqual([]);
      expect(record.error).toMatchObject({ kind: "bad-request", code: expect.any(String) });
      expect(record.bodyBytes).toBeGreaterThan(100_000);
    }
    expect(lines[1]!.record.promptTokens).toBeGreaterThan(8192);
  });

  it("d. a slow request body is cut after its deadline and an idle connection after the idle timeout; others are served meanwhile", async () => {
    const r = proxy.registerRollout("attack-d");
    const other = proxy.registerRollout("bystander-d");
    const port = new URL(proxy.url).port;
    // Slowloris on the body: headers and 10 of 5000 bytes, then a byte every 300 ms.
    const slow = net.connect(Number(port), "127.0.0.1");
    let answer = "";
    slow.on("data", (c) => (answer += c.toString()));
    const closed = new Promise<number>((resolve) => slow.on("close", () => resolve(performance.now())));
    slow.on("error", () => undefined);
    const t0 = performance.now();
    slow.write(
      `POST /r/attack-d/v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${r.apiKey}\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n\r\n{"model":`,
    );
    const drip = setInterval(() => slow.write(" "), 300);
    // An idle connection that never sends a request.
    const idle = net.connect(Number(port), "127.0.0.1");
    idle.on("error", () => undefined);
    const idleClosed = new Promise<number>((resolve) => idle.on("close", () => resolve(performance.now())));
    // Meanwhile another rollout is served as usual.
    expect((await post(chatUrl(other), other.apiKey, honestChat)).status).toBe(200);
    const cutAt = await closed;
    clearInterval(drip);
    expect(answer).toMatch(/^HTTP\/1.1 408/);
    expect(answer).toMatch(/request_timeout/);
    expect(cutAt - t0).toBeGreaterThan(1400);
    expect(cutAt - t0).toBeLessThan(6000);
    expect((await idleClosed) - t0).toBeLessThan(8000);
    expect(proxy.records("attack-d").map((c) => c.error?.code)).toEqual(["RequestBodyTimeout"]);
    expect((await post(chatUrl(other), other.apiKey, honestChat)).status).toBe(200);
  });

  it("e. a sandbox cannot open unlimited connections to its forwarder, nor keep unlimited requests open", async () => {
    const r = proxy.registerRollout("attack-e");
    const dir = tempDir("reins-proxy-sock-");
    const bridge = await createSocketBridge(join(dir, "e.sock"), "127.0.0.1", Number(new URL(proxy.url).port), { maxConnections: 8 });
    try {
      const sockets = await Promise.all(
        Array.from(
          { length: 40 },
          () =>
            new Promise<{ s: net.Socket; closedAt: Promise<number> }>((resolve) => {
              const s = net.connect(bridge.path);
              s.on("error", () => undefined);
              const closedAt = new Promise<number>((done) => s.on("close", () => done(performance.now())));
              s.on("connect", () => resolve({ s, closedAt }));
            }),
        ),
      );
      const t0 = performance.now();
      const firstClosed = await Promise.race(sockets.map((x) => x.closedAt));
      expect(firstClosed - t0).toBeLessThan(1000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(bridge.refused).toBe(32);
      // Held connections are idle: the proxy cuts them after its idle timeout, and the rollout's
      // own call works again.
      await Promise.all(sockets.map((x) => x.closedAt));
      expect((await post(chatUrl(r), r.apiKey, honestChat, { socketPath: bridge.path })).status).toBe(200);
      // Requests held open (bodies that never end) are capped per rollout: the 7th on is refused with 429.
      const partial = JSON.stringify({ model: "m", messages: [] });
      const held = Array.from({ length: 6 }, () => post(chatUrl(r), r.apiKey, partial, { socketPath: bridge.path, headers: { "content-length": "100000" } }));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const extra = await post(chatUrl(r), r.apiKey, honestChat, { socketPath: bridge.path });
      expect(extra.status).toBe(429);
      expect(extra.json.error).toMatchObject({ code: "rate_limit_exceeded" });
      expect((await Promise.all(held)).map((x) => x.status)).toEqual([408, 408, 408, 408, 408, 408]);
      expect((await post(chatUrl(r), r.apiKey, honestChat, { socketPath: bridge.path })).status).toBe(200);
      expect(proxy.records("attack-e").filter((c) => c.error?.code === "TooManyRequests")).toHaveLength(1);
    } finally {
      await bridge.close();
    }
  });

  it("f. while one rollout floods with big bodies, huge prompts, many connections and slow bodies, another's call is answered within a second of its time alone", async () => {
    const attacker = proxy.registerRollout("attack-f");
    const other = proxy.registerRollout("bystander-f");
    const lone = await loneLatency(other);
    // The flood comes from another process, as it would from a sandbox.
    const flood = spawn(process.execPath, ["-e", FLOOD, chatUrl(attacker), attacker.apiKey], { stdio: ["ignore", "ignore", "pipe"] });
    // The sandbox's own CPU is not the proxy's to share (sandboxes have CPU limits): what is
    // measured is the proxy's work for the flood.
    setPriority(flood.pid!, 19);
    let floodErr = "";
    flood.stderr.on("data", (c) => (floodErr += c));
    const floodExit = new Promise((resolve) => flood.on("exit", resolve));
    try {
      // Let the flood reach full strength: its connections open, its bodies on the way.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const during: number[] = [];
      for (let i = 0; i < 8; i++) {
        const reply = await post(chatUrl(other), other.apiKey, honestChat);
        expect(reply.status).toBe(200);
        during.push(reply.ms);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(floodErr).toBe("");
      expect(Math.max(...during)).toBeLessThan(lone + 1000);
      // Every kind of attack got its answer. The slowest is a prompt tokenized off the loop (~2 s
      // alone), sent by a flood at nice 19: under a loaded suite it may take far longer, and only
      // that it comes is asserted, not when.
      for (let i = 0; i < 600 && !proxy.records("attack-f").some((c) => c.error?.code === "ContextLengthExceeded"); i++)
        await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      flood.kill("SIGKILL");
      await floodExit;
    }
    const codes = new Set(proxy.records("attack-f").map((c) => c.error?.code));
    for (const code of ["RequestJsonTooComplex", "ToolArgumentsTooLarge", "ContextLengthExceeded", "PromptTooLong"]) expect(codes).toContain(code);
    expect((await post(chatUrl(other), other.apiKey, honestChat)).status).toBe(200);
  }, 180_000);
});

describe("the proxy's limits are Model settings", () => {
  const modelYaml = (limits: string) => scriptedModelYaml({ spec: [`proxy: ${limits}`] });

  it("a Model's proxy limits are what its proxy enforces", async () => {
    const file = join(tempDir("reins-proxy-limits-"), "model.yaml");
    writeFileSync(file, modelYaml("{maxBodyBytes: 2048, maxRequestsPerRollout: 2}"));
    const config = await loadProxyConfig(file);
    expect(config.diagnostics).toEqual([]);
    expect(config.value!.model.proxy).toEqual({ maxBodyBytes: 2048, maxRequestsPerRollout: 2 });
    const proxy = await startProxy({ model: config.value!.model });
    try {
      const r = proxy.registerRollout("limits");
      const big = await post(chatUrl(r), r.apiKey, chat([{ role: "user", content: "x".repeat(3000) }]));
      expect(big.status).toBe(413);
      expect(big.json.error.message).toMatch(/^request body is 30\d\d bytes; the limit is 2048$/);
      expect((await post(chatUrl(r), r.apiKey, honestChat)).status).toBe(200);
    } finally {
      await proxy.close();
    }
  });

  it("a limit that is not a positive number is refused when the spec is read", async () => {
    const file = join(tempDir("reins-proxy-limits-"), "model.yaml");
    writeFileSync(file, modelYaml("{maxBodyBytes: -1, bodyTimeout: 5}"));
    const config = await loadProxyConfig(file);
    expect(config.value).toBeUndefined();
    expect(config.diagnostics.map((d) => d.code).sort()).toEqual(["InvalidValue", "UnknownField"]);
  });
});

/**
 * The flooding client (argv: chat URL, key): loops of huge-key objects, deep nesting, 15 MB tool
 * arguments, prompts that must be tokenized, prompts far too long, bodies that never end, and
 * 200 connections that send nothing.
 */
const FLOOD = `
const http = require("node:http"), net = require("node:net");
const [url, key] = process.argv.slice(1);
const u = new URL(url);
const MB = 1024 * 1024;
const chat = (messages) => Buffer.from(JSON.stringify({ model: "m", messages }));
const bodies = [
  Buffer.from("{" + Array.from({ length: 600000 }, (_, i) => '"k' + i + '":1').join(",") + "}"),
  Buffer.from("[".repeat(4 * MB) + "]".repeat(4 * MB)),
  chat([{ role: "user", content: "x" }, { role: "assistant", content: "", tool_calls: [{ id: "c", type: "function", function: { name: "w", arguments: "A".repeat(15 * MB) } }] }]),
  chat([{ role: "user", content: "a".repeat(120000) }]),
  chat(Array.from({ length: 30 }, () => ({ role: "user", content: "b".repeat(120000) }))),
];
function post(body, length) {
  return new Promise((resolve) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: "POST", agent: false, headers: { authorization: "Bearer " + key, "content-length": String(length ?? body.length) } }, (res) => { res.resume(); res.on("close", resolve); });
    req.on("error", () => setTimeout(resolve, 50));
    req.end(body);
  });
}
for (const body of bodies) (async () => { for (;;) await post(body); })();
(async () => { for (;;) await post(Buffer.from("{"), 9999); })();
for (let i = 0; i < 200; i++) net.connect(Number(u.port), u.hostname).on("error", () => {});
`;

/**
 * A path with a malformed percent-escape (`%E0%A4%A`, `%zz`, a lone `%`) reaches the proxy before any
 * key is checked (models and probes need none). It is a client's mistake: 400 with a JSON error in
 * the dialect's shape, nothing on the proxy's stderr, and the proxy (every process of it) keeps
 * serving. Run as a user runs it: the `reins proxy` process, its stderr read whole.
 */
describe("a malformed path is a bad request, not a crash", () => {
  const MALFORMED = ["/r/x/v1/models/%E0%A4%A", "/v1/models/%E0%A4%A", "/r/%E0%A4%A/v1/models/%zz", "/models/%", "/r/x/v1/models/ok%2"];

  /** One raw request line on its own connection: the proxy's answer as it came (status, JSON body), or the connection's end. */
  function rawGet(port: number, path: string): Promise<{ status: number; json?: any; text: string }> {
    return new Promise((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      let text = "";
      s.on("data", (c) => (text += c.toString("latin1")));
      s.on("error", () => undefined);
      s.on("close", () => {
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
        const body = text.slice(text.indexOf("\r\n\r\n") + 4);
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        resolve({ status, json, text });
      });
      s.write(`GET ${path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
    });
  }

  it.each([1, 2])(
    "reins proxy with %i process(es): 400 with a JSON error, no stack on stderr, still serving",
    async (processes) => {
      const dir = tempDir("reins-proxy-path-");
      const config = join(dir, "model.yaml");
      writeFileSync(config, scriptedModelYaml({ spec: [`proxy: {processes: ${processes}}`] }));
      const child = spawnReins(["proxy", "--config", config, "--key", "k-path"], { stdio: ["ignore", "pipe", "pipe"], env: { REINS_DEBUG: "" } });
      let out = "";
      let err = "";
      child.stdout!.on("data", (c) => (out += c));
      child.stderr!.on("data", (c) => (err += c));
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      try {
        for (let i = 0; i < 600 && !err.includes("serving model"); i++) await new Promise((resolve) => setTimeout(resolve, 50));
        expect(err).toContain("serving model");
        const port = Number(/:(\d+)\/r\//.exec(out)?.[1]);
        for (const path of MALFORMED) {
          const reply = await rawGet(port, path);
          expect(reply.status, `GET ${path}: ${reply.text}`).toBe(400);
          expect(reply.json?.error, `GET ${path}`).toMatchObject({ type: "invalid_request_error", message: expect.stringMatching(/percent-encod/) });
        }
        // Still serving: a well-formed model lookup, and a rollout's call with the key.
        const model = await rawGet(port, "/r/x/v1/models/qwen%2Ftiny");
        expect(model.status).toBe(200);
        expect(model.json).toMatchObject({ id: "qwen/tiny", object: "model" });
        const ok = await post(`http://127.0.0.1:${port}/r/after/v1/chat/completions`, "k-path", honestChat);
        expect(ok.status).toBe(200);
        expect(child.exitCode).toBeNull();
        expect(err).not.toMatch(/^\s+at /m);
        expect(err).not.toMatch(/internal error|URIError|malformed/i);
      } finally {
        child.kill("SIGTERM");
        await exited;
      }
    },
    60_000,
  );
});
