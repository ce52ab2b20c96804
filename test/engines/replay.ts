/**
 * A loopback HTTP server that replays an engine fixture (test/fixtures/engines/<server>/*.json):
 * GETs of the probe routes it holds answer their recorded body, others 404; POSTs are answered by
 * the test's `answer` (a recorded response, an SSE stream of recorded events, or a failure), and
 * every request is kept so a test can assert what reins sent.
 */
import { taskYaml } from "../executor/helpers.js";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface Seen {
  method: string;
  path: string;
  body: unknown;
  auth?: string;
}

export type Reply = { status?: number; json?: unknown; sse?: unknown[] };

export interface Replay {
  url: string;
  seen: Seen[];
  /** POST answers: by path (with query), then by the request body. */
  answer: (path: string, body: any) => Reply | undefined | Promise<Reply | undefined>;
  close(): Promise<void>;
}

export function readFixture<T = any>(path: string): T {
  return JSON.parse(readFileSync(new URL(`../fixtures/engines/${path}`, import.meta.url), "utf8")) as T;
}

export async function startReplay(probe: Record<string, unknown>): Promise<Replay> {
  const replay: Replay = { url: "", seen: [], answer: () => undefined, close: async () => undefined };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const body = text ? JSON.parse(text) : undefined;
      const path = req.url ?? "/";
      replay.seen.push({ method: req.method ?? "", path, body, ...(req.headers.authorization ? { auth: req.headers.authorization } : {}) });
      const reply: Reply | undefined = req.method === "GET" ? (path in probe ? { json: probe[path] } : undefined) : await replay.answer(path, body);
      if (!reply) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ detail: "Not Found" }));
        return;
      }
      if (reply.sse) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        for (const e of reply.sse) res.write(`data: ${typeof e === "string" ? e : JSON.stringify(e)}\n\n`);
        res.end();
        return;
      }
      res.writeHead(reply.status ?? 200, { "content-type": "application/json" }).end(JSON.stringify(reply.json ?? {}));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  replay.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  replay.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return replay;
}

/** The POSTs reins sent, as path → body, in order. */
export function posts(replay: Replay): { path: string; body: unknown }[] {
  return replay.seen.filter((s) => s.method === "POST").map(({ path, body }) => ({ path, body }));
}

/** An Evaluation of one task through reins-agent whose Model's engine is `engine` (the YAML after `engine:`). */
export function evaluationWithEngine(engine: string): string {
  return `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: t}
spec:
  model: {name: m}
  tasks: [{labels: {suite: t}}]
  harnesses: [{name: h}]
  sandbox: {provider: local, concurrency: 1, retries: 0}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: h}
spec:
  dialect: openai-chat
  command: [node, "{{reinsAgent}}", "{{instruction}}"]
  env: {REINS_BASE_URL: "{{baseUrl}}/v1", REINS_API_KEY: "{{apiKey}}", REINS_MODEL: m}
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: m}
spec:
  tokenizer: {type: qwen3}
  engine: ${engine}
---
${taskYaml("t1")}`;
}
