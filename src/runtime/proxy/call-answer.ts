/**
 * Stage 5 of a call: answer in the harness's dialect — a JSON body, an SSE stream, an error in the
 * dialect's shape, or a stream broken the way the engine's broke.
 */
import type { ServerResponse } from "node:http";
import type { CanonicalCompletion, SseEvent } from "./canonical.js";
import type { DialectHandler, ProxyErrorKind } from "./dialects/dialect.js";
import type { PendingCall } from "./pending-call.js";
import { formatEvent, startEventStream } from "./sse.js";

export function answerCompletion(
  res: ServerResponse,
  dialect: DialectHandler,
  completion: CanonicalCompletion,
  body: Record<string, unknown>,
  stream: boolean,
): void {
  if (stream) writeEventsAndEnd(res, dialect.buildEvents(completion, body));
  else sendJson(res, 200, dialect.buildResponse(completion, body));
}

/** An error in the dialect's shape: a status + body, or error events when the stream already started. */
export function answerError(res: ServerResponse, dialect: DialectHandler, kind: ProxyErrorKind, message: string): void {
  if (res.headersSent) {
    writeEventsAndEnd(res, dialect.streamError(kind, message));
    return;
  }
  const { status, body } = dialect.errorResponse(kind, message);
  sendJson(res, status, body);
}

/**
 * The engine's stream broke after `completion`: relay the answer up to the cut and break the
 * connection, as a harness sees a failing upstream. The proxy answers from the parsed completion,
 * so it chooses where the cut lands: inside the first tool call when there is one (the case a
 * harness must recover from), else half-way. A non-streaming client gets an engine error.
 */
export function answerCut(
  call: PendingCall,
  res: ServerResponse,
  dialect: DialectHandler,
  completion: CanonicalCompletion,
  body: Record<string, unknown>,
  message: string,
): void {
  if (!call.record.stream) {
    call.setError("engine", message, "aborted");
    answerError(res, dialect, "engine", message);
    return;
  }
  const events = dialect.buildEvents(completion, body);
  const cutAt = events.findIndex((e) => e.midToolCall);
  const upTo = cutAt >= 0 ? cutAt + 1 : Math.ceil(events.length / 2);
  call.setError("engine", `stream cut after event ${upTo} of ${events.length}: ${message}`, "aborted");
  startEventStream(res);
  res.write(events.slice(0, upTo).map(formatEvent).join(""), () => res.socket?.destroy());
}

/** Hand the record over once the answer is written or the connection closes, whichever ends it. */
export function recordWhenClosed(call: PendingCall, res: ServerResponse): void {
  res.on("close", () => {
    if (!res.writableFinished && !call.record.error)
      call.setError("client-disconnect", "the client closed the connection while the answer was sent", "aborted");
    call.finish();
  });
}

function writeEventsAndEnd(res: ServerResponse, events: SseEvent[]): void {
  startEventStream(res);
  res.end(events.map(formatEvent).join(""));
}

/**
 * The request's body was left unread (refused on size, time or count): answer, then close the
 * connection rather than read what the client still sends; a client that never reads is cut.
 */
export function closeAfterAnswer(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader("connection", "close");
  const socket = res.socket;
  const cut = setTimeout(() => socket?.destroy(), 2000);
  cut.unref();
  socket?.once("close", () => clearTimeout(cut));
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
