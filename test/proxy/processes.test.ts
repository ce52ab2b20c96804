/**
 * Several proxy processes behind one port (the model's `proxy.processes`): each rollout is served
 * by one process, so later turns still splice the stored completion ids (TITO); the records come
 * back to the front; a connection that carries several rollouts is relayed to each one's process;
 * MCP requests reach the front's handlers with the rollout's own key; a process that dies takes
 * only its own rollouts with it, and a new one takes its place; and nothing outlives the proxy —
 * not even when its process is killed.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Engine, EngineError, type GenerateRequest } from "../../src/runtime/engines/engine.js";
import { createEngine } from "../../src/runtime/engines/registry.js";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import type { ProxyHandle, RolloutRegistration } from "../../src/runtime/proxy/api.js";
import { ownerOfPath } from "../../src/runtime/proxy/processes/protocol.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import type { CallRecord } from "../../src/runtime/records/index.js";
import { pidAlive } from "../suite-hygiene.js";
import { accumulateChat, httpCall, parseSse, scriptedModel, startsWithIds, TOOL_TURN } from "./helpers.js";

const TURNS = [TOOL_TURN, { text: "Done: hello.txt holds hi." }];
const SCRIPT = Array.from({ length: 40 }, (_, i) => TURNS[i % 2]!);
const first = {
  model: "m",
  stream: true,
  messages: [
    { role: "system", content: "You write files." },
    { role: "user", content: "Create hello.txt" },
  ],
};

/** The second turn of a conversation: the streamed answer carried back with a tool result, as a harness does. */
function secondTurn(answerSse: string): Record<string, unknown> {
  const { content, toolCalls } = accumulateChat(parseSse(answerSse));
  const calls = toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
  return {
    ...first,
    messages: [
      ...first.messages,
      { role: "assistant", content, tool_calls: calls },
      ...calls.map((c) => ({ role: "tool", tool_call_id: c.id, content: "wrote 2 bytes" })),
    ],
  };
}

async function converse(r: RolloutRegistration): Promise<void> {
  const headers = { authorization: `Bearer ${r.apiKey}` };
  const a = await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: first, headers });
  expect(a.status, a.text).toBe(200);
  const b = await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: secondTurn(a.text), headers });
  expect(b.status, b.text).toBe(200);
}

function spliced(records: CallRecord[]): void {
  expect(records).toHaveLength(2);
  const [one, two] = records as [CallRecord, CallRecord];
  expect(two.reused).toEqual([one.seq]);
  expect(startsWithIds(two.promptIds!, [...one.promptIds!, ...one.completionIds!])).toBe(true);
}

describe("proxy processes", () => {
  let proxy: ProxyHandle;
  beforeAll(async () => {
    proxy = await startProxy({ model: scriptedModel(SCRIPT, { proxy: { processes: 2 } }) });
  }, 60_000);
  afterAll(() => proxy.close());

  it("each rollout is served by one process: later turns splice its completion, and the records come back", async () => {
    expect(proxy.processIds).toHaveLength(2);
    const rollouts = ["p-a", "p-b", "p-c", "p-d"].map((p) => proxy.registerRollout(p));
    await Promise.all(rollouts.map(converse));
    for (const r of rollouts) {
      await proxy.settle(r.path);
      spliced(proxy.records(r.path));
    }
    expect(proxy.records()).toHaveLength(8);
    for (const r of rollouts) expect(proxy.unregisterRollout(r.path)).toHaveLength(2);
    const gone = await httpCall(`${rollouts[0]!.baseUrl}/v1/chat/completions`, { body: first, headers: { authorization: `Bearer ${rollouts[0]!.apiKey}` } });
    expect(gone.status).toBe(401);
  });

  it("a connection that carries several rollouts is relayed to each one's process", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const rollouts = ["q-a", "q-b", "q-c", "q-d"].map((p) => proxy.registerRollout(p));
    const post = (r: RolloutRegistration, body: unknown) =>
      new Promise<{ status: number; text: string; socket: unknown }>((resolve, reject) => {
        const payload = JSON.stringify(body);
        const req = request(
          `${r.baseUrl}/v1/chat/completions`,
          {
            method: "POST",
            agent,
            headers: { authorization: `Bearer ${r.apiKey}`, "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
          },
          (res) => {
            let text = "";
            res.on("data", (c) => (text += c));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, text, socket: req.socket }));
          },
        );
        req.on("error", reject);
        req.end(payload);
      });
    const answers = [];
    for (const r of rollouts) answers.push(await post(r, first));
    for (const [i, r] of rollouts.entries()) answers.push(await post(r, secondTurn(answers[i]!.text)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.socket)).size).toBe(1);
    for (const r of rollouts) {
      await proxy.settle(r.path);
      spliced(proxy.records(r.path));
      proxy.unregisterRollout(r.path);
    }
    agent.destroy();
  });

  it("another rollout's key is refused in whichever process serves the path, relayed or not", async () => {
    const a = proxy.registerRollout("k-a");
    const b = proxy.registerRollout("k-b");
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (url: string, key: string) =>
      new Promise<number>((resolve, reject) => {
        const payload = JSON.stringify(first);
        const req = request(
          url,
          {
            method: "POST",
            agent,
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
          },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
          },
        );
        req.on("error", reject);
        req.end(payload);
      });
    // a's connection (handed to a's process) asks for b's path with a's key, then with b's
    expect(await post(`${a.baseUrl}/v1/chat/completions`, a.apiKey)).toBe(200);
    expect(await post(`${b.baseUrl}/v1/chat/completions`, a.apiKey)).toBe(401);
    expect(await post(`${a.baseUrl}/v1/chat/completions`, b.apiKey)).toBe(401);
    agent.destroy();
    await proxy.settle(b.path);
    expect(proxy.records(b.path)).toEqual([]);
    proxy.unregisterRollout(a.path);
    proxy.unregisterRollout(b.path);
  });

  it("a connection that sends no request line, garbage or an endless line is closed; the proxy keeps serving", async () => {
    const { connect } = await import("node:net");
    const closed = (send: (s: import("node:net").Socket) => void) =>
      new Promise<string>((resolve) => {
        const s = connect(proxy.port, "127.0.0.1", () => send(s));
        let got = "";
        s.on("data", (c) => (got += c));
        s.on("error", () => undefined);
        s.on("close", () => resolve(got));
      });
    // as one process does: a request it cannot parse ends the connection without an answer
    expect(await closed((s) => s.write("GARBAGE\r\n\r\n"))).toBe("");
    expect(await closed((s) => s.write("x".repeat(64 * 1024)))).toBe("");
    const r = proxy.registerRollout("g-a");
    await converse(r);
    proxy.unregisterRollout(r.path);
  });

  it("MCP requests reach the rollout's handler through its process; another rollout's key is refused", async () => {
    const a = proxy.registerRollout("m-a");
    const b = proxy.registerRollout("m-b");
    const seen: string[] = [];
    proxy.attachMcp(a.path, async (name, req, res) => {
      if (name !== "files") return false;
      let body = "";
      for await (const c of req) body += c;
      seen.push(body);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { echoed: body.length } }));
      return true;
    });
    const call = (key: string, name = "files") =>
      httpCall(`${a.baseUrl}/mcp/${name}`, {
        body: { jsonrpc: "2.0", id: 1, method: "ping" },
        headers: { authorization: `Bearer ${key}`, accept: "application/json, text/event-stream" },
      });
    const ok = await call(a.apiKey);
    expect(ok.status, ok.text).toBe(200);
    expect(JSON.parse(ok.text).result.echoed).toBeGreaterThan(0);
    expect(seen).toHaveLength(1);
    expect((await call(b.apiKey)).status).toBe(401);
    expect((await call(a.apiKey, "nothing")).status).toBe(404);
    proxy.attachMcp(a.path, undefined);
    expect((await call(a.apiKey)).status).toBe(404);
    expect(seen).toHaveLength(1);
    proxy.unregisterRollout(a.path);
    proxy.unregisterRollout(b.path);
  });
});

describe("an engine given to a proxy of several processes", () => {
  it("stays in this process and serves every process's calls, streamed; its errors reach the harness as engine errors", async () => {
    const model = scriptedModel(SCRIPT);
    const inner = await createEngine(model.engine, { model, runtime: await loadModelRuntime(model) });
    const asked: string[] = [];
    const check = (req: GenerateRequest) => {
      asked.push(req.rolloutId);
      if (req.rolloutId === "e-bad") throw new EngineError("boom: the engine is down", "unreachable");
    };
    const engine: Engine = {
      type: "counting",
      generate: async (req) => {
        check(req);
        return inner.generate(req);
      },
      generateStream: async (req, onChunk) => {
        check(req);
        return inner.generateStream!(req, onChunk);
      },
    };
    const proxy = await startProxy({ model, engine, processes: 2 });
    try {
      const rollouts = ["e-a", "e-b", "e-c"].map((p) => proxy.registerRollout(p));
      await Promise.all(rollouts.map(converse));
      expect(asked.sort()).toEqual(["e-a", "e-a", "e-b", "e-b", "e-c", "e-c"]);
      for (const r of rollouts) {
        await proxy.settle(r.path);
        spliced(proxy.records(r.path));
      }
      const bad = proxy.registerRollout("e-bad");
      const answer = await httpCall(`${bad.baseUrl}/v1/chat/completions`, {
        body: { ...first, stream: false },
        headers: { authorization: `Bearer ${bad.apiKey}` },
      });
      expect(answer.status).toBeGreaterThanOrEqual(500);
      expect(answer.text).toContain("boom: the engine is down");
      await proxy.settle(bad.path);
      expect(proxy.records(bad.path).map((r) => r.error?.kind)).toEqual(["engine"]);
    } finally {
      await proxy.close();
    }
  }, 60_000);
});

describe("proxy processes end", () => {
  it("a connection that stays silent is closed after the idle timeout", async () => {
    const proxy = await startProxy({ model: scriptedModel(SCRIPT), processes: 2, limits: { idleTimeoutMs: 300 } });
    try {
      const { connect } = await import("node:net");
      const t0 = Date.now();
      await new Promise<void>((resolve) => {
        const s = connect(proxy.port, "127.0.0.1");
        s.on("error", () => undefined);
        s.on("close", () => resolve());
      });
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      await proxy.close();
    }
  }, 30_000);

  it("a process that dies takes only its own rollouts; close() ends the rest", async () => {
    const proxy = await startProxy({ model: scriptedModel(SCRIPT), processes: 2 });
    const [one, two] = [proxy.registerRollout("d-1"), proxy.registerRollout("d-2")];
    await Promise.all([converse(one), converse(two)]);
    // least loaded first: d-1 on the first process, d-2 on the second
    process.kill(proxy.processIds![1]!, "SIGKILL");
    await new Promise((r) => setTimeout(r, 300));
    const lost = await httpCall(`${two.baseUrl}/v1/chat/completions`, { body: first, headers: { authorization: `Bearer ${two.apiKey}` } }).catch(
      (e: Error) => ({ status: 0, text: e.message }),
    );
    expect(lost.status).toBe(0);
    const kept = await httpCall(`${one.baseUrl}/v1/chat/completions`, { body: first, headers: { authorization: `Bearer ${one.apiKey}` } });
    expect(kept.status, kept.text).toBe(200);
    await proxy.settle(two.path);
    const pids = proxy.processIds!;
    await proxy.close();
    expect(pids.filter(pidAlive)).toEqual([]);
  }, 60_000);

  it("a new process takes a dead one's place: new rollouts and shared-key paths are served by it again", async () => {
    const proxy = await startProxy({ model: scriptedModel(SCRIPT), processes: 2, sharedKey: "shared-key" });
    const seen: number[] = [...proxy.processIds!];
    try {
      const dead = proxy.processIds![1]!;
      // a shared-key path that process 1 serves, before and after its death
      const path = Array.from({ length: 64 }, (_, i) => `s-${i}`).find((p) => ownerOfPath(p, 2) === 1)!;
      const sharedCall = () =>
        httpCall(`${proxy.url}/r/${path}/v1/chat/completions`, { body: { ...first, stream: false }, headers: { authorization: "Bearer shared-key" } }).catch(
          (e: Error) => ({ status: 0, text: e.message }),
        );
      expect((await sharedCall()).status).toBe(200);
      process.kill(dead, "SIGKILL");
      const t0 = Date.now();
      while (proxy.processIds![1] === dead && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 50));
      const replacement = proxy.processIds![1]!;
      seen.push(replacement);
      expect(replacement).not.toBe(dead);
      expect(pidAlive(replacement)).toBe(true);
      expect(pidAlive(dead)).toBe(false);
      const again = await sharedCall();
      expect(again.status, again.text).toBe(200);
      // registered rollouts are served again, with their TITO splicing
      const rollouts = ["n-1", "n-2", "n-3"].map((p) => proxy.registerRollout(p));
      await Promise.all(rollouts.map(converse));
      for (const r of rollouts) {
        await proxy.settle(r.path);
        spliced(proxy.records(r.path));
      }
    } finally {
      await proxy.close();
    }
    expect(seen.filter(pidAlive)).toEqual([]);
  }, 60_000);

  it("when the front's process is killed, its processes end too", async () => {
    const script = `
      import { startProxy } from "./src/runtime/proxy/server.ts";
      const proxy = await startProxy({ model: ${JSON.stringify(scriptedModel(SCRIPT))}, processes: 2 });
      process.stdout.write(JSON.stringify(proxy.processIds) + "\\n");
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: process.cwd(),
      stdio: ["ignore", "pipe", "inherit"],
    });
    const pids = await new Promise<number[]>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (c) => {
        out += c;
        if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]!));
      });
      child.on("exit", (code) => reject(new Error(`exited ${code}`)));
    });
    expect(pids).toHaveLength(2);
    expect(pids.every(pidAlive)).toBe(true);
    child.kill("SIGKILL");
    const deadline = Date.now() + 10_000;
    while (pids.some(pidAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(pids.filter(pidAlive)).toEqual([]);
  }, 60_000);

  it("a model a process cannot load fails the start with the model's error, and leaves no process", async () => {
    const before = childPids();
    const bad = scriptedModel(SCRIPT, { tokenizer: { type: "file", path: "/nonexistent/tokenizer.json" } });
    const failure = (processes: number) =>
      startProxy({ model: bad, processes }).then(
        () => undefined,
        (e: unknown) => ({ code: (e as { code?: string }).code, message: (e as Error).message, hint: (e as { hint?: string }).hint }),
      );
    const alone = await failure(1);
    expect(alone?.code).toBeTruthy();
    expect(await failure(2)).toEqual(alone);
    await new Promise((r) => setTimeout(r, 300));
    expect(childPids().filter((p) => !before.includes(p))).toEqual([]);
  }, 60_000);
});

function childPids(): number[] {
  try {
    return readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
