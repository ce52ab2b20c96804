/**
 * Proxy overhead: the serving proxy (chat dialect, streaming, scripted engine, real tokenizer)
 * vs a bare node:http server that answers the same SSE bytes, side by side, at 1, 16 and 128
 * concurrent streams. Each request is the first call of a fresh rollout of the same harness, as in
 * a training step: its system prompt and first message come from the proxy's shared segment cache
 * after the first rollout; the scripted answer is tokenized, parsed and written as SSE every time.
 * Then the same for later turns: conversations of TURNS calls whose answers are carried back (as a
 * harness does) with a tool result each, so the proxy splices its stored completion ids and
 * tokenizes only the new tool result; the bare server answers the same bytes to the same bodies.
 * The servers run in a child process so the client does not share their core; the server's CPU
 * time per request (both servers live in that process, loaded one at a time) and the client's
 * are printed beside the ratios. Both servers (and the client) are long-running, so they are
 * measured warm: WARM_CALLS first calls and as many later turns each before the rows, so that V8
 * has compiled their code; each row runs ROUNDS times, bare then proxy, and gives the median
 * ratio with its range (the machine's load drifts within a run).
 *
 *   node --import tsx bench/proxy-overhead.ts [--cpu-prof DIR] [--processes N] [--connection-per-rollout] [--semi-space MB]
 * With --cpu-prof the server process writes a V8 CPU profile into DIR when the bench ends. With
 * --processes N the proxy runs as N processes behind its port; their CPU counts as the proxy's.
 * By default the client keeps one pool of connections for all rollouts (the cheapest client);
 * with --connection-per-rollout each rollout's calls go on a connection of its own, as harnesses
 * do (each runs in its own sandbox) — then the several processes never relay a call. With
 * --semi-space MB the servers' process gets a young generation of that size (see processes/front.ts).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import type { ResolvedModel } from "../src/compiler/contract/plan.js";
import { startProxy } from "../src/runtime/proxy/server.js";

const KEY = "bench-key";
/** `--processes N`: the proxy runs as N processes behind its port (the model's proxy.processes). */
const PROCESSES = Number(process.argv[process.argv.indexOf("--processes") + 1] ?? 1) || 1;

/** `--semi-space MB`: the servers' process starts with V8's `--max-semi-space-size` (as reins's proxy processes do, with 64). */
const SEMI_SPACE = process.argv.includes("--semi-space") ? [`--max-semi-space-size=${Number(process.argv[process.argv.indexOf("--semi-space") + 1])}`] : [];

/** `--connection-per-rollout`: each rollout's calls on a connection of its own (as harnesses), not one pool for all. */
const PER_ROLLOUT = process.argv.includes("--connection-per-rollout");

/** A process's CPU time so far (µs), from /proc (clock ticks of 10 ms). */
function cpuOfProcess(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}
const LEVELS = [
  { concurrency: 1, requests: 150 },
  { concurrency: 16, requests: 480 },
  { concurrency: 128, requests: 1280 },
];

/** Calls of each kind that warm each server up before the rows: long-running servers, measured JIT-compiled. */
const WARM_CALLS = 2000;
/** Rounds per row, bare then proxy each: the ratio is the median of the rounds' (the machine's load drifts). */
const ROUNDS = 3;

/** Turns of each conversation in the "later turns" rows; its tool results grow the prompt by ~1 KB a turn. */
const TURNS = 8;
const TOOL_RESULT = `wrote 2 bytes to hello.txt\n${"ok: the workspace checks pass; nothing else changed. ".repeat(20)}`;

const request0 = {
  model: "qwen3",
  stream: true,
  stream_options: { include_usage: true },
  tools: [
    {
      type: "function",
      function: {
        name: "write",
        description: "Write a file.",
        parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } } },
      },
    },
  ],
  messages: [
    { role: "system", content: `You are a coding agent.\n${"Follow the workspace conventions; keep edits small and tested. ".repeat(60)}` },
    { role: "user", content: "Create hello.txt containing hi, then explain what you did." },
  ] as Record<string, unknown>[],
};
const body = JSON.stringify(request0);

async function serve(): Promise<void> {
  const model: ResolvedModel = {
    name: "qwen3",
    tokenizer: { type: "qwen3" },
    toolCallFormat: "qwen3",
    reasoning: { start: "<think>", end: "</think>" },
    stopTokens: ["<|im_end|>"],
    maxContextTokens: 32768,
    sampling: { temperature: 1, topP: 1, maxTokens: 2048 },
    engine: {
      type: "scripted",
      script: Array.from({ length: TURNS }, () => ({
        reasoning: "The user wants a file. I will write it with the tool and then explain briefly.",
        text: "I'll create the file now, then describe the change.\n",
        toolCalls: [{ name: "write", arguments: { path: "hello.txt", content: "hi" } }],
      })),
    },
  };
  const proxy = await startProxy({ model, sharedKey: KEY, processes: PROCESSES });
  const captured = await post(`${proxy.url}/r/capture/v1/chat/completions`, new Agent());
  const bytes = Buffer.from(captured.body);
  const bare = createServer((req, res) => {
    if (req.url === "/cpu") {
      const { user, system } = process.cpuUsage();
      res.end(String(user + system + (proxy.processIds ?? []).reduce((sum, pid) => sum + cpuOfProcess(pid), 0)));
      return;
    }
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
      res.end(bytes);
    });
  });
  bare.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve));
  process.stdout.write(`${JSON.stringify({ proxy: proxy.url, bare: `http://127.0.0.1:${(bare.address() as AddressInfo).port}`, bytes: bytes.length })}\n`);
}

function post(url: string, agent: Agent, payload = body): Promise<{ ms: number; body: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(
      url,
      { method: "POST", agent, headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "content-length": Buffer.byteLength(payload) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
          else resolve({ ms: performance.now() - t0, body: Buffer.concat(chunks).toString("utf8") });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** The assistant message a harness sends back: the streamed answer's text and tool calls. */
function assistantOf(sse: string): Record<string, unknown> {
  let content = "";
  const calls: { id: string; type: "function"; function: { name: string; arguments: string } }[] = [];
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const delta = JSON.parse(line.slice(6)).choices?.[0]?.delta;
    if (typeof delta?.content === "string") content += delta.content;
    for (const tc of delta?.tool_calls ?? []) {
      const call = (calls[tc.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
      call.id += tc.id ?? "";
      call.function.name += tc.function?.name ?? "";
      call.function.arguments += tc.function?.arguments ?? "";
    }
  }
  return { role: "assistant", content, tool_calls: calls };
}

/** One conversation of `turns` calls: each answer carried back with a tool result; the latencies of turns 2 on. */
async function converse(url: string, agent: Agent, turns: number, lat: number[]): Promise<void> {
  const messages = [...request0.messages];
  for (let t = 0; t < turns; t++) {
    const answer = await post(url, agent, JSON.stringify({ ...request0, messages }));
    if (t > 0) lat.push(answer.ms);
    const assistant = assistantOf(answer.body);
    messages.push(assistant, ...(assistant.tool_calls as { id: string }[]).map((c) => ({ role: "tool", tool_call_id: c.id, content: TOOL_RESULT })));
  }
}

/** The server process's CPU time so far (µs): both servers share it, and are loaded one at a time. */
function serverCpu(bare: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(`${bare}/cpu`, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve(Number(text)));
    })
      .on("error", reject)
      .end();
  });
}

/** `total` calls from `concurrency` streams: first calls of fresh rollouts, or conversations of `turns` calls each. */
async function load(base: string, concurrency: number, total: number, tag: string, turns = 1): Promise<{ lat: number[]; seconds: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next;
        next += turns;
        const url = `${base}/r/${tag}-${i}/v1/chat/completions`;
        // as harnesses do: each rollout on connections of its own
        const own = PER_ROLLOUT ? new Agent({ keepAlive: true, maxSockets: 1 }) : agent;
        if (turns === 1) lat.push((await post(url, own)).ms);
        else await converse(url, own, turns, lat);
        if (own !== agent) own.destroy();
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  return { lat: lat.sort((a, b) => a - b), seconds };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function main(): Promise<void> {
  const profIndex = process.argv.indexOf("--cpu-prof");
  const prof = profIndex >= 0 ? ["--cpu-prof", "--cpu-prof-dir", process.argv[profIndex + 1]!] : [];
  const child = spawn(
    process.execPath,
    [...prof, ...SEMI_SPACE, "--import", "tsx", fileURLToPath(import.meta.url), "--serve", "--processes", String(PROCESSES)],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const info = await new Promise<{ proxy: string; bare: string; bytes: number }>((resolve, reject) => {
    let buf = "";
    child.stdout!.on("data", (c) => {
      buf += c;
      if (buf.includes("\n")) resolve(JSON.parse(buf.split("\n")[0]!));
    });
    child.on("exit", (code) => reject(new Error(`server process exited with ${code}`)));
  });
  try {
    console.log(`proxy-overhead: chat SSE answer of ${info.bytes} bytes; proxy = render ${Buffer.byteLength(body)} B request + scripted engine + parse + SSE`);
    // Both servers are long-running: measure them warm (JIT-compiled), not while V8 still compiles their code.
    const t0 = performance.now();
    for (const [name, base] of [
      ["bare", info.bare],
      ["proxy", info.proxy],
    ] as const) {
      await load(base, 16, WARM_CALLS, `warm-first-${name}`);
      await load(base, 16, WARM_CALLS, `warm-later-${name}`, TURNS);
    }
    console.log(
      `warm-up: ${WARM_CALLS} first calls and ${WARM_CALLS} later turns per server (${((performance.now() - t0) / 1000).toFixed(1)} s); each row: ${ROUNDS} rounds, bare then proxy; latencies pooled, throughput ratio the median of the rounds' (range)`,
    );
    console.log(
      "streams  requests  bare p50  bare p99  proxy p50  proxy p99  added p50  added p99  throughput proxy/bare  server CPU per request: bare  proxy  (client, bare)",
    );
    const rows = [...LEVELS.map((l) => ({ ...l, turns: 1 })), ...LEVELS.map((l) => ({ ...l, requests: l.requests * 2, turns: TURNS }))];
    for (const { concurrency, requests, turns } of rows) {
      if (turns > 1 && concurrency === LEVELS[0]!.concurrency)
        console.log(
          `later turns: conversations of ${TURNS} calls, each answer carried back with a ${TOOL_RESULT.length}-character tool result; latency of calls 2–${TURNS}, throughput of all`,
        );
      const bareLat: number[] = [];
      const proxyLat: number[] = [];
      const ratios: number[] = [];
      let bareCpu = 0;
      let proxyCpu = 0;
      let clientCpu = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const cpu0 = await serverCpu(info.bare);
        const client0 = process.cpuUsage();
        const bare = await load(info.bare, concurrency, requests, `bare-${concurrency}-${turns}-${round}`, turns);
        const client1 = process.cpuUsage();
        const cpu1 = await serverCpu(info.bare);
        const proxy = await load(info.proxy, concurrency, requests, `proxy-${concurrency}-${turns}-${round}`, turns);
        const cpu2 = await serverCpu(info.bare);
        bareLat.push(...bare.lat);
        proxyLat.push(...proxy.lat);
        ratios.push(bare.seconds / proxy.seconds);
        bareCpu += cpu1 - cpu0;
        proxyCpu += cpu2 - cpu1;
        clientCpu += client1.user + client1.system - client0.user - client0.system;
      }
      const calls = requests * ROUNDS;
      const sorted = (v: number[]) => v.sort((a, b) => a - b);
      const [bl, pl, rs] = [sorted(bareLat), sorted(proxyLat), sorted(ratios)];
      const perCall = (us: number) => `${(us / calls).toFixed(0)}µs`.padStart(8);
      const ms = (v: number) => `${v.toFixed(2)}ms`.padStart(9);
      const ratio = `${rs[rs.length >> 1]!.toFixed(3)} (${rs[0]!.toFixed(2)}–${rs.at(-1)!.toFixed(2)})`;
      console.log(
        `${String(concurrency).padStart(7)}  ${String(calls).padStart(8)}  ${ms(pct(bl, 50))} ${ms(pct(bl, 99))}  ${ms(pct(pl, 50))}  ${ms(pct(pl, 99))}  ${ms(pct(pl, 50) - pct(bl, 50))}  ${ms(pct(pl, 99) - pct(bl, 99))}  ${ratio.padStart(22)}  ${perCall(bareCpu)}  ${perCall(proxyCpu)}  ${perCall(clientCpu)}`,
      );
    }
  } finally {
    child.kill("SIGTERM");
  }
}

if (process.argv.includes("--serve")) {
  process.on("SIGTERM", () => process.exit(0)); // a clean exit writes the CPU profile
  await serve();
} else await main();
