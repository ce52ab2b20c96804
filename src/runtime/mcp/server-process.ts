/**
 * One stdio MCP server running in a sandbox, seen as an MCP SDK `Transport`: JSON-RPC messages go
 * to its stdin (a stream fed while it runs) and come from its stdout, one per line (the SDK's own
 * framing). Its stderr is kept (the tail) to say why it failed; its end is reported once.
 */
import { PassThrough } from "node:stream";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { ExecResult, Sandbox, SandboxProcess } from "../sandbox/provider.js";
import { messageOf } from "../sandbox/sandbox-error.js";

const STDERR_TAIL = 2000;

export class ServerProcess implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** Set once the process has ended (exit status, or the runner's kill). */
  exit?: ExecResult;
  private readonly input = new PassThrough();
  private readonly buffer = new ReadBuffer();
  private stderr = "";
  private process?: SandboxProcess;
  private closing = false;
  readonly ended: Promise<ExecResult>;
  private resolveEnded!: (r: ExecResult) => void;

  constructor(
    private readonly sandbox: Sandbox,
    private readonly argv: string[],
    private readonly options: { cwd: string; env: Record<string, string>; timeoutMs: number },
  ) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
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
        this.end({ exitCode: null, signal: null, stdout: "", stderr: this.stderr, stdoutTruncated: false, stderrTruncated: false, timedOut: false, durationMs: 0 });
      },
    );
  }

  private end(r: ExecResult): void {
    this.exit = r;
    this.resolveEnded(r);
    this.onclose?.();
  }

  private read(chunk: Buffer): void {
    this.buffer.append(chunk);
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.buffer.readMessage();
      } catch (e) {
        this.onerror?.(e as Error);
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }

  private keepStderr(chunk: Buffer): void {
    this.stderr = (this.stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
  }

  /** The end of what the server wrote on stderr. */
  stderrTail(): string {
    return this.stderr.trim();
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
