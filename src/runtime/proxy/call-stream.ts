/**
 * A streaming answer written while the engine generates (stages 3–5 of a call, token by token).
 * Each chunk of ids is decoded (TokenTextStream), read by the model's output format as far as it
 * is certain (OutputStream), and written as the dialect's events (DialectStream). When the engine
 * is done, the finished completion — parsed from all its ids exactly as a non-streaming call
 * parses them, and recorded as such — supplies what was held back, and the dialect's closing
 * events end the answer. The record never depends on what was streamed. Ids are read only when a
 * write is due (at most every FLUSH_EVERY_MS): an engine that finishes within the first window
 * gets the answer a non-live stream gets, built from the completion and written at once.
 */
import type { ServerResponse } from "node:http";
import { type OutputPiece, OutputStream } from "../model/output-stream.js";
import type { ModelRuntime } from "../model/model-runtime.js";
import { TokenTextStream } from "../model/token-text-stream.js";
import type { CanonicalCompletion, SseEvent } from "./canonical.js";
import type { DialectHandler, DialectStream, StreamHead } from "./dialects/dialect.js";
import type { PendingCall } from "./pending-call.js";
import { formatEvent, startEventStream } from "./sse.js";

/**
 * Events are written at most this often per answer: text released closer together goes out as one
 * delta, in one write. Each write to a loopback or pod socket costs as much as a small request, so
 * under load (an engine streaming tokens faster than the proxy turns its loop) the window keeps an
 * answer to a few writes; a harness reading a slow engine still sees each token within 8 ms.
 */
const FLUSH_EVERY_MS = 8;
/**
 * With more answers streaming at once in this process, the window widens: 8 ms more per
 * STREAMS_PER_STEP answers, up to MAX_FLUSH_EVERY_MS (a quarter of a second at 128 streams). The
 * writes per second of the whole process stay bounded (about 500 at most from the window) instead
 * of growing with the streams; an answer's end is written when the engine finishes, never later,
 * so a harness waits no longer for a whole answer.
 */
const STREAMS_PER_STEP = 4;
const MAX_FLUSH_EVERY_MS = 256;
let streaming = 0;

/** The write window of an answer opened while `open` answers stream (itself included). */
export function flushWindowMs(open: number): number {
  return Math.min(MAX_FLUSH_EVERY_MS, FLUSH_EVERY_MS * Math.max(1, Math.ceil(open / STREAMS_PER_STEP)));
}

export class LiveAnswer {
  /** Made at the first write: an answer the engine finishes within the window never needs them. */
  private live: { decoder: TokenTextStream; reader: OutputStream; stream: DialectStream } | undefined;
  /** The opening events are written (with the first token). */
  private begun = false;
  private written = 0;
  private midToolCall = false;
  private flushed: Promise<void> = Promise.resolve();
  /** Pieces released since the last write. */
  private queue: OutputPiece[] = [];
  /** Ids pushed since the last write, not yet read. */
  private unread: number[] = [];
  /** Set by the first token: until then a failure is still a plain HTTP error. */
  private generating = false;
  private timer: NodeJS.Timeout | undefined;
  private counted = true;

  constructor(
    private readonly res: ServerResponse,
    private readonly runtime: ModelRuntime,
    private readonly dialect: DialectHandler,
    private readonly head: StreamHead,
    private readonly body: Record<string, unknown>,
  ) {
    streaming++;
    res.once("close", () => this.uncount());
  }

  private opened(): { decoder: TokenTextStream; reader: OutputStream; stream: DialectStream } {
    this.live ??= {
      decoder: new TokenTextStream(this.runtime.tokenizer, new Set(this.runtime.stopIds)),
      reader: new OutputStream(this.runtime.format),
      stream: this.dialect.openStream(this.head, this.body),
    };
    return this.live;
  }

  private uncount(): void {
    if (this.counted) streaming--;
    this.counted = false;
  }

  /** The engine produced `ids`: they are read at the next write (or not at all, when the engine finishes first). */
  push(ids: readonly number[]): void {
    if (this.res.destroyed) return;
    this.generating = true;
    for (const id of ids) this.unread.push(id);
    this.timer ??= setTimeout(() => this.flush(), flushWindowMs(streaming));
  }

  /** Read the ids pushed since the last write: decoded, read by the output format as far as it is certain, queued. */
  private read(): void {
    if (this.unread.length === 0) return;
    const ids = this.unread;
    this.unread = [];
    const { reader, decoder } = this.opened();
    for (const piece of reader.push(decoder.push(ids))) {
      const last = this.queue.at(-1);
      // text that comes before the next write goes out as one delta
      if (last && last.kind === piece.kind && last.kind !== "tool" && piece.kind !== "tool") last.text += piece.text;
      else this.queue.push(piece.kind === "tool" ? piece : { ...piece });
    }
  }

  /** The completion is finished: the held-back rest and the closing events, then the end of the answer. */
  finish(completion: CanonicalCompletion): void {
    clearTimeout(this.timer);
    this.uncount();
    // nothing written yet (the engine was faster than the write window): the whole answer at once
    const events = this.begun ? [...this.queued(), ...this.rest(completion)] : this.dialect.buildEvents(completion, this.body);
    startEventStream(this.res);
    this.res.end(events.map(formatEvent).join(""));
  }

  /**
   * The engine's stream broke after `completion`: write on up to the first tool-call delta (the
   * case a harness must recover from) — or half of what is left when none comes — and break the
   * connection, never writing the answer's last event; the record says where it broke.
   */
  cut(call: PendingCall, completion: CanonicalCompletion, message: string): void {
    this.flush();
    this.uncount();
    const rest = this.rest(completion);
    const mid = rest.findIndex((e) => e.midToolCall);
    const upTo = this.midToolCall ? 0 : mid >= 0 ? mid + 1 : Math.min(Math.ceil(rest.length / 2), rest.length - 1);
    call.setError("engine", `stream cut after event ${this.written + upTo} of ${this.written + rest.length}: ${message}`, "aborted");
    this.write(rest.slice(0, upTo));
    startEventStream(this.res);
    this.res.flushHeaders(); // the client sees an answer begun, then broken
    void this.flushed.then(() => this.res.socket?.destroy());
  }

  private rest(completion: CanonicalCompletion): SseEvent[] {
    const events = this.openEvents();
    const { reader, stream } = this.opened();
    for (const piece of reader.finish(completion.parsed)) events.push(...stream.push(piece));
    events.push(...stream.end(completion));
    return events;
  }

  private openEvents(): SseEvent[] {
    if (this.begun) return [];
    this.begun = true;
    return this.opened().stream.open();
  }

  /** Write what is pending now (before an error is written after it, or the connection is cut). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.res.writableEnded || this.res.destroyed) return;
    this.write(this.queued());
  }

  /** The events of the queued pieces (the opening events first, once: they go out with the first token). */
  private queued(): SseEvent[] {
    if (!this.generating) return [];
    this.read();
    const events = this.openEvents();
    const { stream } = this.opened();
    for (const piece of this.queue) events.push(...stream.push(piece));
    this.queue = [];
    return events;
  }

  private write(events: SseEvent[]): void {
    if (events.length === 0) return;
    this.written += events.length;
    if (events.some((e) => e.midToolCall)) this.midToolCall = true;
    startEventStream(this.res);
    const text = events.map(formatEvent).join("");
    this.flushed = new Promise((resolve) => this.res.write(text, () => resolve()));
  }
}
