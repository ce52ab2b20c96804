/**
 * The relay between a harness and one of its rollout's MCP servers. The harness speaks MCP's
 * streamable HTTP (the SDK's server transport, reached through the proxy); the server speaks stdio
 * in its sandbox (./server-process.ts). reins itself opens the server (initialize, tools/list)
 * before the harness starts, so a server that cannot start fails the try before any token is spent;
 * the harness's own initialize is then answered from that opening, and every later message is
 * forwarded under ids of the relay's own (so the harness cannot collide with reins's requests).
 * On the way, the allow-list hides other tools from tools/list and refuses calls of them, and
 * every tools/call is recorded with its arguments, answer and latency — outside the sandbox,
 * where the agent cannot forge or drop the record.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { McpCallRecord } from "../records/rollout-result.js";
import type { ExecResult } from "../sandbox/provider.js";
import type { ServerProcess } from "./server-process.js";

/** Recorded results longer than this (as JSON) keep their beginning only. */
export const MAX_RECORDED_RESULT_CHARS = 64 * 1024;

type Message = JSONRPCMessage & { id?: string | number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: { code: number; message: string } };

interface Pending {
  /** The harness's id, or a probe's resolver. */
  original?: string | number;
  probe?: (m: Message) => void;
  transport?: StreamableHTTPServerTransport;
  method: string;
  tool?: string;
  arguments?: unknown;
  at: number;
}

/** How a server's process ended, for a message: its exit code, its signal, or neither (its sandbox failed). */
function statusOf(r: ExecResult): string {
  return String(r.exitCode ?? r.signal ?? "no exit status");
}

export class McpRelayError extends Error {
  constructor(
    readonly code: "McpServerUnavailable" | "McpServerCrashed",
    message: string,
  ) {
    super(message);
  }
}

export class McpRelay {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly transports: StreamableHTTPServerTransport[] = [];
  private initResult?: Record<string, unknown>;
  /** The tools the server listed that the harness may see. */
  tools: string[] = [];

  constructor(
    readonly name: string,
    private readonly server: ServerProcess,
    private readonly opts: { allowed: string[] | null; startedAt: number; record: (c: McpCallRecord) => void },
  ) {
    server.onmessage = (m) => this.fromServer(m as Message);
  }

  /** Starts the server and opens it as a client would; throws McpRelayError when it does not answer in time. */
  async open(timeoutMs: number): Promise<void> {
    await this.server.start();
    const fail = (why: string) => new McpRelayError("McpServerUnavailable", `The MCP server ${this.name} ${why}${this.stderrNote()}`);
    const ask = (method: string, params: Record<string, unknown>) =>
      new Promise<Message>((resolve, reject) => {
        const id = this.nextId++;
        const timer = setTimeout(() => {
          this.pending.delete(id);
          reject(fail(`did not answer ${method} within ${Math.round(timeoutMs / 1000)} s`));
        }, timeoutMs);
        this.pending.set(id, { probe: (m) => (clearTimeout(timer), resolve(m)), method, at: Date.now() });
        void this.server.ended.then((r) => (clearTimeout(timer), reject(fail(`exited (${statusOf(r)}) before answering ${method}`))));
        void this.server.send({ jsonrpc: "2.0", id, method, params } as JSONRPCMessage);
      });
    const init = await ask("initialize", { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "reins", version: "1" } });
    if (init.error || !init.result) throw fail(`refused initialize: ${init.error?.message ?? "no result"}`);
    this.initResult = init.result;
    await this.server.send({ jsonrpc: "2.0", method: "notifications/initialized" } as JSONRPCMessage);
    const listed = await ask("tools/list", {});
    const tools = ((listed.result?.tools as { name: string }[] | undefined) ?? []).map((t) => t.name);
    this.tools = tools.filter((t) => this.allows(t));
  }

  private stderrNote(): string {
    const tail = this.server.stderrTail();
    return tail ? `; its stderr ends with: ${tail.slice(-600)}` : "";
  }

  /** Why the server failed while the harness ran, if it did (it must live until closed). */
  failure(): McpRelayError | undefined {
    if (!this.server.exit) return undefined;
    const r = this.server.exit;
    return new McpRelayError("McpServerCrashed", `The MCP server ${this.name} exited (${statusOf(r)}) while the harness ran${this.stderrNote()}`);
  }

  private allows(tool: string): boolean {
    return this.opts.allowed === null || this.opts.allowed.includes(tool);
  }

  /** One HTTP request of the harness (POST, GET or DELETE of streamable HTTP). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const session = req.headers["mcp-session-id"];
    let transport = typeof session === "string" ? this.transports.find((t) => t.sessionId === session) : undefined;
    if (!transport) {
      if (typeof session === "string") {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
        return;
      }
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
      const t = transport;
      t.onmessage = (m) => this.fromHarness(m as Message, t);
      await t.start();
      this.transports.push(t);
    }
    await transport.handleRequest(req, res);
  }

  private fromHarness(m: Message, transport: StreamableHTTPServerTransport): void {
    const at = Date.now();
    if (m.method !== undefined && m.id !== undefined) {
      if (m.method === "initialize") {
        const asked = (m.params?.protocolVersion as string | undefined) ?? "";
        const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : (this.initResult?.protocolVersion ?? LATEST_PROTOCOL_VERSION);
        void transport.send({ jsonrpc: "2.0", id: m.id, result: { ...this.initResult, protocolVersion } } as JSONRPCMessage);
        return;
      }
      const tool = m.method === "tools/call" ? String(m.params?.name ?? "") : undefined;
      if (tool !== undefined && !this.allows(tool)) {
        const message = `The tool ${tool} of ${this.name} is not allowed in this task.`;
        this.opts.record({ server: this.name, tool, arguments: m.params?.arguments ?? null, atMs: at - this.opts.startedAt, latencyMs: 0, error: { code: "ToolNotAllowed", message } });
        void transport.send({ jsonrpc: "2.0", id: m.id, error: { code: -32602, message } } as JSONRPCMessage);
        return;
      }
      const id = this.nextId++;
      this.pending.set(id, { original: m.id, transport, method: m.method, ...(tool !== undefined ? { tool, arguments: m.params?.arguments ?? null } : {}), at });
      void this.server.send({ ...m, id } as JSONRPCMessage);
      return;
    }
    if (m.method === "notifications/initialized") return; // reins sent it when it opened the server
    void this.server.send(m as JSONRPCMessage);
  }

  private fromServer(m: Message): void {
    const isResponse = m.method === undefined && m.id !== undefined;
    if (!isResponse) {
      // The server's own requests and notifications go to the harness's latest session.
      const t = this.transports.at(-1);
      if (t) void t.send(m as JSONRPCMessage);
      return;
    }
    const p = this.pending.get(Number(m.id));
    if (!p) return;
    this.pending.delete(Number(m.id));
    if (p.probe) return p.probe(m);
    let answer: Message = { ...m, id: p.original! };
    if (p.method === "tools/list" && m.result && Array.isArray(m.result.tools)) {
      answer = { ...answer, result: { ...m.result, tools: (m.result.tools as { name: string }[]).filter((t) => this.allows(t.name)) } };
    }
    if (p.tool !== undefined) {
      this.opts.record({
        server: this.name,
        tool: p.tool,
        arguments: p.arguments,
        atMs: p.at - this.opts.startedAt,
        latencyMs: Date.now() - p.at,
        ...(m.error ? { error: { code: m.error.code, message: m.error.message } } : { result: capped(m.result) }),
      });
    }
    void p.transport!.send(answer as JSONRPCMessage);
  }

  async close(): Promise<void> {
    await Promise.all(this.transports.map((t) => t.close().catch(() => undefined)));
    await this.server.close();
  }
}

function capped(result: unknown): unknown {
  const text = JSON.stringify(result ?? null);
  if (text.length <= MAX_RECORDED_RESULT_CHARS) return result;
  return { truncated: true, chars: text.length, start: text.slice(0, MAX_RECORDED_RESULT_CHARS) };
}
