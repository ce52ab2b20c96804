/**
 * Test helper: a forward proxy on 127.0.0.1 that never forwards. A harness run with HTTP(S)_PROXY /
 * ALL_PROXY pointing here has every attempt to reach another host (CONNECT for HTTPS, absolute-URL
 * requests for HTTP) recorded and refused. Loopback is in NO_PROXY, so calls to the serving proxy go
 * straight to it.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface EgressAttempt {
  kind: "connect" | "http" | "client-error";
  /** host:port for CONNECT, the URL for plain HTTP. */
  target: string;
  method?: string;
  userAgent?: string;
}

export interface EgressRecorder {
  url: string;
  attempts: EgressAttempt[];
  /** Proxy variables (upper and lower case) that route a harness's other traffic here. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startEgressRecorder(): Promise<EgressRecorder> {
  const attempts: EgressAttempt[] = [];
  const server = http.createServer((req, res) => {
    attempts.push({ kind: "http", target: req.url ?? "", method: req.method, userAgent: req.headers["user-agent"] });
    res.writeHead(403, { "content-type": "text/plain", connection: "close" });
    res.end("egress refused by the reins test recorder\n");
  });
  server.on("connect", (req, socket) => {
    attempts.push({ kind: "connect", target: req.url ?? "", method: "CONNECT", userAgent: req.headers["user-agent"] });
    socket.on("error", () => {});
    socket.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
  });
  server.on("clientError", (err, socket) => {
    attempts.push({ kind: "client-error", target: String(err.message) });
    socket.destroy();
  });
  server.on("connection", (socket) => socket.on("error", () => {}));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env: Record<string, string> = {};
  for (const name of ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"]) {
    env[name] = url;
    env[name.toLowerCase()] = url;
  }
  env.NO_PROXY = env.no_proxy = "127.0.0.1,localhost,::1";
  return {
    url,
    attempts,
    env,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
