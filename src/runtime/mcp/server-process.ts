/**
 * One stdio MCP server running in a sandbox, seen as an MCP SDK `Transport`: JSON-RPC messages go
 * to its stdin (a stream fed while it runs) and come from its stdout, one per line (the SDK's own
 * framing). Its stderr is kept (the tail) to say why it failed; its end is reported once, with the
 * time it was seen.
 *
 * What the server writes is read as it arrives, a line at a time, never more than `maxLineBytes`
 * of one line: a longer line is skipped to its end (its first and last bytes kept, to say what it
 * answered) and reported to `onoversize`, so no server can make the runner buffer without bound.
 */
import { PassThrough } from "node:stream";
import { deserializeMessage, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { ExecResult, Sandbox, SandboxProcess } from "../sandbox/provider.js";
import { messageOf } from "../sandbox/sandbox-error.js";
import { DEFAULT_MAX_RESULT_BYTES, MAX_RECORDED_CHARS } from "./limits.js";

const STDERR_TAIL = 2000;
/** Bytes kept of the end of a line too long to read (where the SDK writes a response's id). */
const OVERSIZED_TAIL = 1024;

/** A line the server wrote that was over the limit: never parsed. */
export interface OversizedMessage {
  /** Its length in bytes (without the newline). */
  bytes: number;
  /** Its beginning, as text. */
  start: string;
  /** It begins as a JSON-RPC response does (a result or an error), not as a request or notification. */
  response: boolean;
  /** The request id it answers, when its beginning or end names one. */
  id?: number;
}

/**
 * Whether a message's text is a JSON-RPC response, and the numeric id it answers, from its
 * beginning (`{"jsonrpc":"2.0","id":7,"result":`, as Python's SDK writes it) or, for a message that
 * begins with its result or error (`{"result":…,"jsonrpc":"2.0","id":7}`, as the TypeScript SDK
 * writes it), from its end.
 */
export function responseOf(head: string, tail: string): { response: boolean; id?: number } {
  const first = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(\d{1,15})\s*,\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"\s*:/.exec(head);
  if (first) return { response: true, id: Number(first[1]) };
  if (!/^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"\s*:/.test(head)) return { response: false };
  const last = /"id"\s*:\s*(\d{1,15})\s*\}\s*$/.exec(tail);
  return last ? { response: true, id: Number(last[1]) } : { response: true };
}

export class ServerProcess implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** A line over `maxLineBytes` was skipped. */
  onoversize?: (message: OversizedMessage) => void;
  /** Set once the process has ended (exit status, or the runner's kill). */
  exit?: ExecResult;
  /** ms epoch when its end was seen. */
  exitedAt?: number;
  /** reins closed it (its end is then no failure). */
  closing = false;
  private readonly input = new PassThrough();
  /** The line being read: its pieces, within the limit. */
  private line: Buffer[] = [];
  private lineBytes = 0;
  /** The line being skipped (over the limit): its size, beginning and end. */
  private skipping?: { bytes: number; head: Buffer; tail: Buffer };
  private stderr = "";
  private process?: SandboxProcess;
  readonly ended: Promise<ExecResult>;
  private resolveEnded!: (r: ExecResult) => void;
  private readonly maxLineBytes: number;

  constructor(
    private readonly sandbox: Sandbox,
    private readonly argv: string[],
    private readonly options: { cwd: string; env: Record<string, string>; timeoutMs: number; maxLineBytes?: number },
  ) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_RESULT_BYTES;
  }

  async start(): Promise<void> {
    this.process = this.sandbox.spawn(this.argv, {
      cwd: this.options.cwd,
      env: this.options.env,
      timeoutMs: this.options.timeoutMs,
      stdin: this.input,
      maxOutputBytes: 64 * 1024,
      onOutput: (stream, chunk) => (stream === "stdout" ? this.read(chunk) : this.keepStderr(chunk)),
    });
    void this.process.wait().then(
      (r) => this.end(r),
      // The sandbox failed under it (died, or exec broke): an end like any other, said on stderr.
      (error: unknown) => {
        this.keepStderr(Buffer.from(`${this.stderr === "" || this.stderr.endsWith("\n") ? "" : "\n"}${messageOf(error)}`));
        this.end({
          exitCode: null,
          signal: null,
          stdout: "",
          stderr: this.stderr,
          stdoutTruncated: false,
          stderrTruncated: false,
          timedOut: false,
          durationMs: 0,
        });
      },
    );
  }

  private end(r: ExecResult): void {
    this.exit = r;
    this.exitedAt = Date.now();
    this.resolveEnded(r);
    this.onclose?.();
  }

  private read(chunk: Buffer): void {
    let from = 0;
    while (from < chunk.length) {
      const nl = chunk.indexOf(10, from);
      this.take(chunk.subarray(from, nl < 0 ? chunk.length : nl));
      if (nl < 0) return;
      this.endLine();
      from = nl + 1;
    }
  }

  /** A piece of the current line: kept while the line is within the limit, else only counted. */
  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    const s = this.skipping;
    if (s) {
      s.bytes += piece.length;
      s.tail = Buffer.from(Buffer.concat([s.tail, piece.subarray(-OVERSIZED_TAIL)]).subarray(-OVERSIZED_TAIL));
      return;
    }
    if (this.lineBytes + piece.length <= this.maxLineBytes) {
      this.line.push(Buffer.from(piece));
      this.lineBytes += piece.length;
      return;
    }
    const all = Buffer.concat([...this.line, piece]);
    this.skipping = { bytes: all.length, head: Buffer.from(all.subarray(0, MAX_RECORDED_CHARS)), tail: Buffer.from(all.subarray(-OVERSIZED_TAIL)) };
    this.line = [];
    this.lineBytes = 0;
  }

  private endLine(): void {
    const s = this.skipping;
    if (s) {
      this.skipping = undefined;
      const start = s.head.toString("utf8");
      this.onoversize?.({ bytes: s.bytes, start, ...responseOf(start, s.tail.toString("utf8")) });
      return;
    }
    const text = Buffer.concat(this.line).toString("utf8").replace(/\r$/, "");
    this.line = [];
    this.lineBytes = 0;
    if (text.trim() === "") return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(text);
    } catch (e) {
      this.onerror?.(e as Error);
      return;
    }
    this.onmessage?.(message);
  }

  private keepStderr(chunk: Buffer): void {
    this.stderr = (this.stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
  }

  /** The end of what the server wrote on stderr. */
  stderrTail(): string {
    return this.stderr.trim();
  }

  /** Bytes sent that the server has not read yet (held by the runner). */
  backlog(): number {
    return this.input.writableLength + this.input.readableLength;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closing || this.exit) return;
    this.input.write(serializeMessage(message));
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.input.end();
    await this.process?.kill();
    await this.ended;
  }
}
