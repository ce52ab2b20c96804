/**
 * A request for a rollout another proxy process serves, relayed there as it is: method, path,
 * headers and body on the way in; status, headers and body (streamed) on the way back. Only a
 * client that carries several rollouts on one connection needs this (a harness keeps to its own).
 */
import { Agent, type IncomingMessage, request, type ServerResponse } from "node:http";

const agent = new Agent({ keepAlive: true });

/** Headers of one hop only: the relay makes its own connection. */
const HOP = new Set(["connection", "keep-alive", "proxy-connection", "upgrade", "te", "trailer"]);

function endToEnd(headers: IncomingMessage["headers"]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP.has(name)) out[name] = value;
  return out;
}

/** Relay `req` to the process at `peer` (http://host:port) and its answer back; resolves when done either way. */
export function relayRequest(peer: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const out = request(`${peer}${req.url ?? "/"}`, { method: req.method, headers: endToEnd(req.headers), agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
      answer.pipe(res);
      answer.on("error", () => res.destroy());
    });
    out.on("error", (err) => {
      if (!res.headersSent) {
        res.writeHead(502, { "content-type": "application/json", connection: "close" });
        res.end(JSON.stringify({ error: { message: `the proxy process serving this rollout did not answer: ${err.message}`, type: "server_error" } }));
      } else res.destroy();
    });
    res.on("close", () => {
      if (!res.writableFinished) out.destroy();
      resolve();
    });
    req.pipe(out);
  });
}
