/**
 * An in-process stand-in for the Kubernetes API server on 127.0.0.1. REST calls are answered by
 * replaying recorded exchanges (fixtures written from the API's semantics), in order; exec calls
 * are served over a real websocket speaking the v5/v4 channel protocol, with the command run by a
 * backend (real processes in a local sandbox per pod). Anything unexpected is recorded.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import type { Duplex } from "node:stream";
import { CHANNEL, encodeChannelFrame } from "../../src/runtime/sandbox/kubernetes/exec-status.js";

export interface Exchange {
  request: { method: string; path: string; query?: Record<string, string> };
  response: { status: number; body?: unknown };
  /** May answer several requests in a row (polling); `advance()` moves past it. */
  repeat?: boolean;
  note?: string;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  body: unknown;
}

export interface ExecRequest {
  namespace: string;
  pod: string;
  container: string;
  command: string[];
  protocol: string;
}

export interface ExecBackend {
  /** False when the pod does not exist (the upgrade is then refused with 404, as a real server does). */
  has(pod: string): boolean;
  run(pod: string, command: string[], stdin: Buffer | null, onOutput: (channel: 1 | 2, chunk: Buffer) => void): Promise<number>;
  /** Called for DELETE of a pod. */
  deleted?(pod: string): Promise<void>;
}

const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const EXEC_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/;
const POD_PATH = /^\/api\/v1\/namespaces\/[^/]+\/pods\/([^/]+)$/;

function queryOf(url: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(key);
    out[key] = all.length === 1 ? all[0] : all;
  }
  return out;
}

/** Server→client websocket frame (unmasked). */
function wsFrame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  let head: Buffer;
  if (len < 126) head = Buffer.from([0x80 | opcode, len]);
  else if (len < 65536) {
    head = Buffer.alloc(4);
    head[0] = 0x80 | opcode;
    head[1] = 126;
    head.writeUInt16BE(len, 2);
  } else {
    head = Buffer.alloc(10);
    head[0] = 0x80 | opcode;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  return Buffer.concat([head, payload]);
}

/** Parses client→server frames (masked) from a growing buffer; returns complete messages. */
export class FrameReader {
  private buffer = Buffer.alloc(0);
  private fragments: Buffer[] = [];

  push(chunk: Buffer): { opcode: number; payload: Buffer }[] {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const out: { opcode: number; payload: Buffer }[] = [];
    for (;;) {
      if (this.buffer.length < 2) break;
      const fin = (this.buffer[0] & 0x80) !== 0;
      const opcode = this.buffer[0] & 0x0f;
      const masked = (this.buffer[1] & 0x80) !== 0;
      let len = this.buffer[1] & 0x7f;
      let offset = 2;
      if (len === 126) {
        if (this.buffer.length < 4) break;
        len = this.buffer.readUInt16BE(2);
        offset = 4;
      } else if (len === 127) {
        if (this.buffer.length < 10) break;
        len = Number(this.buffer.readBigUInt64BE(2));
        offset = 10;
      }
      const maskLength = masked ? 4 : 0;
      if (this.buffer.length < offset + maskLength + len) break;
      const mask = this.buffer.subarray(offset, offset + maskLength);
      const payload = Buffer.from(this.buffer.subarray(offset + maskLength, offset + maskLength + len));
      if (masked) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i % 4];
      this.buffer = this.buffer.subarray(offset + maskLength + len);
      if (opcode >= 8) {
        out.push({ opcode, payload });
        continue;
      }
      this.fragments.push(payload);
      if (fin) {
        out.push({ opcode: opcode || 2, payload: Buffer.concat(this.fragments) });
        this.fragments = [];
      }
    }
    return out;
  }
}

export function statusFor(exitCode: number, command: string[]): Record<string, unknown> {
  if (exitCode === 0) return { metadata: {}, status: "Success" };
  return {
    metadata: {},
    status: "Failure",
    message: `command terminated with non-zero exit code: error executing command [${command.join(" ")}], exit code ${exitCode}`,
    reason: "NonZeroExitCode",
    details: { causes: [{ reason: "ExitCode", message: String(exitCode) }] },
  };
}

export class MockApiServer {
  readonly received: ReceivedRequest[] = [];
  readonly execs: ExecRequest[] = [];
  readonly unexpected: string[] = [];
  private index = 0;
  private readonly server: http.Server;
  url = "";

  private constructor(
    private readonly exchanges: Exchange[],
    private readonly backend?: ExecBackend,
  ) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.on("upgrade", (req, socket) => void this.upgrade(req, socket));
  }

  static async start(exchanges: Exchange[], backend?: ExecBackend): Promise<MockApiServer> {
    const mock = new MockApiServer(exchanges, backend);
    await new Promise<void>((resolve) => mock.server.listen(0, "127.0.0.1", resolve));
    mock.url = `http://127.0.0.1:${(mock.server.address() as { port: number }).port}`;
    return mock;
  }

  /** True once the repeating exchange at `index` has answered at least once. */
  private answered = false;

  /** Moves past the repeating exchange currently answering. */
  advance(): void {
    if (this.exchanges[this.index]?.repeat) {
      this.index++;
      this.answered = false;
    }
  }

  /** Exchanges never answered (a repeating one counts once it answered). */
  pending(): Exchange[] {
    const rest = this.exchanges.slice(this.index);
    return this.answered ? rest.slice(1) : rest;
  }

  private match(method: string, path: string, query: Record<string, string | string[]>): Exchange | null {
    for (let j = this.index; j < this.exchanges.length; j++) {
      const e = this.exchanges[j];
      const queryOk = Object.entries(e.request.query ?? {}).every(([k, v]) => query[k] === v);
      if (e.request.method === method && e.request.path === path && queryOk) {
        this.index = e.repeat ? j : j + 1;
        this.answered = e.repeat === true;
        return e;
      }
      // Only a repeating exchange that already answered may be passed over.
      if (!(e.repeat && j === this.index && this.answered)) return null;
    }
    return null;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* keep text */
    }
    const query = queryOf(url);
    this.received.push({ method: req.method ?? "", path: url.pathname, query, body });
    const exchange = this.match(req.method ?? "", url.pathname, query);
    if (!exchange) {
      this.unexpected.push(`${req.method} ${url.pathname}${url.search}`);
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message: "unexpected request", reason: "InternalError", code: 500 }));
      return;
    }
    const podMatch = POD_PATH.exec(url.pathname);
    if (req.method === "DELETE" && podMatch && this.backend?.deleted) await this.backend.deleted(podMatch[1]);
    res.writeHead(exchange.response.status, { "content-type": "application/json" });
    res.end(exchange.response.body === undefined ? "" : JSON.stringify(exchange.response.body));
  }

  private async upgrade(req: http.IncomingMessage, socket: Duplex): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const m = EXEC_PATH.exec(url.pathname);
    const offered = String(req.headers["sec-websocket-protocol"] ?? "")
      .split(",")
      .map((s) => s.trim());
    const protocol = ["v5.channel.k8s.io", "v4.channel.k8s.io"].find((p) => offered.includes(p));
    if (!m || !protocol || !this.backend) {
      this.unexpected.push(`UPGRADE ${url.pathname}`);
      socket.end("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    const [, namespace, pod] = m;
    const command = url.searchParams.getAll("command");
    const container = url.searchParams.get("container") ?? "";
    this.execs.push({ namespace, pod, container, command, protocol });
    if (!this.backend.has(pod)) {
      const body = JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message: `pods "${pod}" not found`, reason: "NotFound", code: 404 });
      socket.end(`HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      return;
    }
    const accept = createHash("sha1").update(`${req.headers["sec-websocket-key"]}${WS_GUID}`).digest("base64");
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: ${protocol}\r\n\r\n`,
    );
    const send = (channel: number, payload: Buffer | string): void => {
      if (!socket.destroyed) socket.write(wsFrame(2, encodeChannelFrame(channel, payload)));
    };
    const wantsStdin = url.searchParams.get("stdin") === "true";
    // A real server opens each stream with an empty frame.
    send(CHANNEL.stdout, "");
    send(CHANNEL.stderr, "");
    const stdin: Buffer[] = [];
    const reader = new FrameReader();
    let started = false;
    const start = async (): Promise<void> => {
      if (started) return;
      started = true;
      const code = await this.backend!.run(pod, command, wantsStdin ? Buffer.concat(stdin) : null, (channel, chunk) => send(channel, chunk));
      send(CHANNEL.status, JSON.stringify(statusFor(code, command)));
      if (!socket.destroyed) socket.end(wsFrame(8, Buffer.from([0x03, 0xe8])));
    };
    socket.on("data", (chunk: Buffer) => {
      for (const frame of reader.push(chunk)) {
        if (frame.opcode === 8) {
          socket.end(wsFrame(8, Buffer.from([0x03, 0xe8])));
          continue;
        }
        if (frame.opcode === 9) {
          socket.write(wsFrame(10, frame.payload));
          continue;
        }
        const channel = frame.payload[0];
        if (channel === CHANNEL.stdin) stdin.push(frame.payload.subarray(1));
        if (channel === CHANNEL.close && frame.payload[1] === CHANNEL.stdin) void start();
      }
    });
    socket.on("error", () => undefined);
    if (!wantsStdin) await start();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections?.();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
