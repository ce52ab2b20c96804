/** Writing server-sent events. */
import type { ServerResponse } from "node:http";
import type { SseEvent } from "./canonical.js";

export function formatEvent(e: SseEvent): string {
  const data = typeof e.data === "string" ? e.data : JSON.stringify(e.data);
  return `${e.event ? `event: ${e.event}\n` : ""}data: ${data}\n\n`;
}

/** The event stream's head; it goes out with the first bytes written after it (one packet, not two). */
export function startEventStream(res: ServerResponse): void {
  if (res.headersSent) return;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
}

/** An SSE comment line: every client parser ignores it; it keeps idle-timeouts at bay. */
export const KEEPALIVE = ": keep-alive\n\n";
