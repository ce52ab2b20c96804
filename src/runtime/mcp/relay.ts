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
 *
 * Sizes are checked before the work (./limits.ts): a request body is read only up to its limit, a
 * call's arguments over the server's `maxArgumentBytes` are refused unforwarded, and an answer over
 * its `maxResultBytes` is never read whole; each refusal reaches the harness as its tool's result
 * (`isError`, the code in the text) and the record, with the original size, never the runner.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { McpCallRecord } from "../records/rollout-result.js";
import type { ExecResult } from "../sandbox/provider.js";
import { closeAfterAnswer, sendJson } from "../proxy/call-answer.js";
import {
  cutValue,
  DEFAULT_MAX_ARGUMENT_BYTES,
  DEFAULT_MAX_RESULT_BYTES,
  inputBacklogLimit,
  jsonSize,
  MAX_OPEN_REQUESTS,
  MAX_SESSIONS,
  RecordBudget,
  requestBodyLimit,
  type Kept,
} from "./limits.js";
import type { OversizedMessage, ServerProcess } from "./server-process.js";
import { McpRelayError } from "./relay-error.js";

export { McpRelayError } from "./relay-error.js";

type Message = JSONRPCMessage & {
  id?: string | number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
};

interface Pending {
  /** The harness's id, or a probe's resolver. */
  original?: string | number;
  probe?: (m: Message) => void;
  transport?: StreamableHTTPServerTransport;
  method: string;
  tool?: string;
  /** The call's arguments as the record keeps them. */
  arguments?: Kept;
  at: number;
}

/** How a server's process ended, for a message: its exit code, its signal, or neither (its sandbox failed). */
function statusOf(r: ExecResult): string {
  return String(r.exitCode ?? r.signal ?? "no exit status");
}

export interface RelayOptions {
  allowed: string[] | null;
  startedAt: number;
  record: (c: McpCallRecord) => void;
  /** The largest arguments of one tools/call (JSON, UTF-8 bytes). */
  maxArgumentBytes?: number;
  /** The largest message the server may write (one JSON line, bytes); also the server process's line limit. */
  maxResultBytes?: number;
  /** The try's record budget, shared by its servers. */
  budget?: RecordBudget;
}

/** A refusal code of the relay's own. */
type RefusalCode = "ToolNotAllowed" | "McpArgumentsTooLarge" | "McpResultTooLarge" | "McpServerNotReading" | "McpServerCrashed";

/** An HTTP request refused before it is read: answered at once, the connection closed after the answer. */
function refuseRequest(res: ServerResponse, status: 413 | 429, code: "McpArgumentsTooLarge" | "McpTooManyRequests", message: string): void {
  closeAfterAnswer(res);
  sendJson(res, status, { jsonrpc: "2.0", error: { code: -32000, message: `${message} (${code})`, data: { code } }, id: null });
}

export class McpRelay {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly transports: StreamableHTTPServerTransport[] = [];
  private initResult?: Record<string, unknown>;
  private openRequests = 0;
  private readonly maxArgumentBytes: number;
  private readonly maxResultBytes: number;
  private readonly budget: RecordBudget;
  /** The tools the server listed that the harness may see. */
  tools: string[] = [];

  constructor(
    readonly name: string,
    private readonly server: ServerProcess,
    private readonly opts: RelayOptions,
  ) {
    this.maxArgumentBytes = opts.maxArgumentBytes ?? DEFAULT_MAX_ARGUMENT_BYTES;
    this.maxResultBytes = opts.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
    this.budget = opts.budget ?? new RecordBudget();
    server.onmessage = (m) => this.fromServer(m as Message);
    server.onoversize = (m) => this.oversized(m);
    server.onclose = () => this.serverEnded();
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
        this.pending.set(id, {
          probe: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
          method,
          at: Date.now(),
        });
        void this.server.ended.then((r) => {
          clearTimeout(timer);
          reject(fail(`exited (${statusOf(r)}) before answering ${method}`));
        });
        void this.server.send({ jsonrpc: "2.0", id, method, params } as JSONRPCMessage);
      });
    const init = await ask("initialize", { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "reins", version: "1" } });
    if (init.error || !init.result) throw fail(`refused initialize: ${init.error?.message ?? "no result"}`);
    this.initResult = init.result;
    await this.server.send({ jsonrpc: "2.0", method: "notifications/initialized" } as JSONRPCMessage);
    const listed = await ask("tools/list", {});
    if (listed.error) throw fail(`refused tools/list: ${listed.error.message}`);
    const tools = ((listed.result?.tools as { name: string }[] | undefined) ?? []).map((t) => t.name);
    this.tools = tools.filter((t) => this.allows(t));
  }

  private stderrNote(): string {
    const tail = this.server.stderrTail();
    return tail ? `; its stderr ends with: ${tail.slice(-600)}` : "";
  }

  /**
   * Why the server failed while the harness ran, if it did (it must live until closed). An end
   * seen at or after `before` (ms epoch: the harness's end, or the try's deadline when that came
   * first) is no failure — the harness's end or timeout decides the try — and neither is an end
   * reins caused (close, or the server's own backstop timer).
   */
  failure(before = Number.POSITIVE_INFINITY): McpRelayError | undefined {
    const r = this.server.exit;
    if (!r || this.server.closing || r.timedOut || (this.server.exitedAt ?? 0) >= before) return undefined;
    return new McpRelayError("McpServerCrashed", `The MCP server ${this.name} exited (${statusOf(r)}) while the harness ran${this.stderrNote()}`);
  }

  private allows(tool: string): boolean {
    return this.opts.allowed === null || this.opts.allowed.includes(tool);
  }

  /** One HTTP request of the harness (POST, GET or DELETE of streamable HTTP). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.openRequests >= MAX_OPEN_REQUESTS) {
      req.resume();
      refuseRequest(
        res,
        429,
        "McpTooManyRequests",
        `Too many MCP requests are open at once to ${this.name} (at most ${MAX_OPEN_REQUESTS}); wait for answers first.`,
      );
      return;
    }
    this.openRequests++;
    res.once("close", () => this.openRequests--);
    const session = req.headers["mcp-session-id"];
    let transport = typeof session === "string" ? this.transports.find((t) => t.sessionId === session) : undefined;
    if (!transport && typeof session === "string") {
      req.resume();
      sendJson(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
      return;
    }
    let parsed: unknown;
    if (req.method === "POST") {
      const body = await this.readBody(req, res);
      if (body === undefined) return;
      try {
        parsed = JSON.parse(body);
      } catch {
        sendJson(res, 400, { jsonrpc: "2.0", error: { code: -32700, message: "Parse error: Invalid JSON" }, id: null });
        return;
      }
    }
    if (!transport) {
      if (this.transports.length >= MAX_SESSIONS) {
        refuseRequest(res, 429, "McpTooManyRequests", `Too many MCP sessions with ${this.name} (at most ${MAX_SESSIONS}); end one (DELETE) or keep using one.`);
        return;
      }
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
      const t = transport;
      t.onmessage = (m) => this.fromHarness(m as Message, t);
      t.onclose = () => this.forget(t);
      await t.start();
      this.transports.push(t);
    }
    await transport.handleRequest(req, res, parsed);
    // a request that did not open a session (no initialize) leaves no transport behind
    if (transport.sessionId === undefined) {
      this.forget(transport);
      await transport.close().catch(() => undefined);
    }
  }

  private forget(t: StreamableHTTPServerTransport): void {
    const at = this.transports.indexOf(t);
    if (at >= 0) this.transports.splice(at, 1);
  }

  /** The body of a POST, read up to the limit; undefined when it was refused (answered 413) or cut off. */
  private readBody(req: IncomingMessage, res: ServerResponse): Promise<string | undefined> {
    const limit = requestBodyLimit(this.maxArgumentBytes);
    const refuse = (bytes: number, head: string) => {
      const tool = /"name"\s*:\s*"((?:[^"\\]|\\.){1,128})"/.exec(head)?.[1] ?? "";
      const message = `The MCP request to ${this.name} is over ${limit} bytes (${bytes} at least); a call's arguments may have at most ${this.maxArgumentBytes} bytes.`;
      this.recordCall(tool, this.budget.keepCut(cutValue(bytes, head, false)), Date.now(), 0, {
        error: { code: "McpArgumentsTooLarge", message: `${message} (McpArgumentsTooLarge)` },
      });
      refuseRequest(res, 413, "McpArgumentsTooLarge", message);
    };
    // A body declared over the limit is read only as far as its beginning (to name the tool in the record).
    const declared = Number(req.headers["content-length"]);
    const readTo = declared > limit ? 64 * 1024 : limit;
    return new Promise((resolve) => {
      const parts: Buffer[] = [];
      let bytes = 0;
      let done = false;
      const finish = (text: string | undefined) => {
        if (done) return;
        done = true;
        req.off("data", onData);
        resolve(text);
      };
      const onData = (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes <= readTo) {
          parts.push(chunk);
          return;
        }
        req.pause();
        refuse(
          Math.max(bytes, declared || 0),
          Buffer.concat([...parts, chunk])
            .subarray(0, 64 * 1024)
            .toString("utf8"),
        );
        finish(undefined);
      };
      req.on("data", onData);
      req.once("end", () => finish(Buffer.concat(parts).toString("utf8")));
      req.once("error", () => finish(undefined));
      req.once("close", () => finish(undefined));
    });
  }

  /** Answers a harness's request without the server: a tool's refusal as its result (isError), any other request's as a JSON-RPC error. */
  private answerRefusal(transport: StreamableHTTPServerTransport, id: string | number, tool: string | undefined, message: string): void {
    const answer =
      tool !== undefined
        ? { jsonrpc: "2.0", id, result: { content: [{ type: "text", text: message }], isError: true } }
        : { jsonrpc: "2.0", id, error: { code: -32000, message } };
    void transport.send(answer as JSONRPCMessage).catch(() => undefined);
  }

  private recordCall(
    tool: string,
    args: Kept,
    at: number,
    latencyMs: number,
    outcome: { result: Kept } | { error: { code: string | number; message: string }; result?: Kept },
  ): void {
    const result = outcome.result;
    const truncated = { ...(args.bytes !== undefined ? { arguments: args.bytes } : {}), ...(result?.bytes !== undefined ? { result: result.bytes } : {}) };
    this.opts.record({
      server: this.name,
      tool,
      arguments: args.value,
      atMs: at - this.opts.startedAt,
      latencyMs,
      ...(result ? { result: result.value } : {}),
      ...("error" in outcome ? { error: outcome.error } : {}),
      ...(Object.keys(truncated).length > 0 ? { truncated } : {}),
    });
  }

  private fromHarness(m: Message, transport: StreamableHTTPServerTransport): void {
    const at = Date.now();
    if (m.method !== undefined && m.id !== undefined) {
      if (m.method === "initialize") {
        const asked = (m.params?.protocolVersion as string | undefined) ?? "";
        const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : (this.initResult?.protocolVersion ?? LATEST_PROTOCOL_VERSION);
        void transport.send({ jsonrpc: "2.0", id: m.id, result: { ...this.initResult, protocolVersion } } as JSONRPCMessage).catch(() => undefined);
        return;
      }
      const tool = m.method === "tools/call" ? String(m.params?.name ?? "") : undefined;
      const args = tool !== undefined ? (m.params?.arguments ?? null) : undefined;
      const refuse = (code: RefusalCode, message: string, kept: Kept) => {
        if (tool !== undefined) this.recordCall(tool, kept, at, 0, { error: { code, message } });
        if (code === "ToolNotAllowed")
          void transport.send({ jsonrpc: "2.0", id: m.id, error: { code: -32602, message } } as JSONRPCMessage).catch(() => undefined);
        else this.answerRefusal(transport, m.id!, tool, message);
      };
      if (tool !== undefined && !this.allows(tool)) {
        refuse("ToolNotAllowed", `The tool ${tool} of ${this.name} is not allowed in this task.`, this.budget.keep(args));
        return;
      }
      if (tool !== undefined) {
        const size = jsonSize(args);
        if (!size || size.bytes > this.maxArgumentBytes) {
          const what = size ? `are ${size.bytes} bytes as JSON` : "are nested too deeply to write as JSON";
          const message = `The arguments of ${tool} ${what}; the MCP server ${this.name} takes at most ${this.maxArgumentBytes} bytes (McpArgumentsTooLarge). Send less: a path or a part instead of the whole content.`;
          const kept = this.budget.keep(args);
          refuse("McpArgumentsTooLarge", message, { value: kept.value, bytes: size?.bytes ?? kept.bytes ?? 0 });
          return;
        }
      }
      const backlog = this.server.backlog();
      if (backlog > inputBacklogLimit(this.maxArgumentBytes)) {
        refuse(
          "McpServerNotReading",
          `The MCP server ${this.name} has not read the ${backlog} bytes already sent to it; the call was not forwarded (McpServerNotReading).`,
          this.budget.keep(args),
        );
        return;
      }
      const id = this.nextId++;
      this.pending.set(id, { original: m.id, transport, method: m.method, ...(tool !== undefined ? { tool, arguments: this.budget.keep(args) } : {}), at });
      void this.server.send({ ...m, id } as JSONRPCMessage);
      return;
    }
    if (m.method === "notifications/initialized") return; // reins sent it when it opened the server
    if (this.server.backlog() > inputBacklogLimit(this.maxArgumentBytes)) return; // a notification or answer to a server that does not read: dropped
    void this.server.send(m as JSONRPCMessage);
  }

  private fromServer(m: Message): void {
    const isResponse = m.method === undefined && m.id !== undefined;
    if (!isResponse) {
      // The server's own requests and notifications go to the harness's latest session.
      const t = this.transports.at(-1);
      if (t) void t.send(m as JSONRPCMessage).catch(() => undefined);
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
      this.recordCall(
        p.tool,
        p.arguments!,
        p.at,
        Date.now() - p.at,
        m.error ? { error: { code: m.error.code, message: m.error.message } } : { result: this.budget.keep(m.result) },
      );
    }
    void p.transport!.send(answer as JSONRPCMessage).catch(() => undefined);
  }

  /** A message of the server over maxResultBytes: the request it answers (all open ones, when it does not say which) gets an error. */
  private oversized(o: OversizedMessage): void {
    if (!o.response) return; // a request, notification or stray output of the server: dropped
    const ids = o.id !== undefined ? [o.id].filter((id) => this.pending.has(id)) : [...this.pending.keys()];
    for (const id of ids) {
      const p = this.pending.get(id)!;
      this.pending.delete(id);
      const message = `The answer of the MCP server ${this.name} to ${p.tool ?? p.method} was ${o.bytes} bytes; reins relays at most ${this.maxResultBytes} bytes (McpResultTooLarge). Ask for less: a narrower query, or a part of the result.`;
      if (p.probe) {
        p.probe({ jsonrpc: "2.0", id, error: { code: -32000, message } } as Message);
        continue;
      }
      if (p.tool !== undefined) {
        this.recordCall(p.tool, p.arguments!, p.at, Date.now() - p.at, {
          error: { code: "McpResultTooLarge", message },
          result: this.budget.keepCut(cutValue(o.bytes, o.id === id ? o.start : "", false)),
        });
      }
      this.answerRefusal(p.transport!, p.original!, p.tool, message);
    }
  }

  /** The server ended: the harness's open requests get an error at once rather than waiting for its timeout. */
  private serverEnded(): void {
    if (this.server.closing) return;
    for (const [id, p] of [...this.pending]) {
      if (p.probe) continue; // open() is told by `ended`
      this.pending.delete(id);
      const message = `The MCP server ${this.name} exited (${statusOf(this.server.exit!)}) before it answered.`;
      if (p.tool !== undefined) this.recordCall(p.tool, p.arguments!, p.at, Date.now() - p.at, { error: { code: "McpServerCrashed", message } });
      this.answerRefusal(p.transport!, p.original!, p.tool, message);
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.transports].map((t) => t.close().catch(() => undefined)));
    await this.server.close();
  }
}
