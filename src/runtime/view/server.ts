/**
 * `reins view`'s HTTP server (node:http): the web app's three static files, shipped in ./web and
 * served by fixed name, and the JSON API (./api.ts). Loopback by default, and only loopback unless
 * `allowRemote` is set (anyone who reaches the address reads the runs: there is no password);
 * requests whose Host is not this server are refused (a web page elsewhere cannot read the run
 * through DNS rebinding; a wildcard bind, 0.0.0.0 or ::, accepts any Host);
 * every answer carries a strict Content-Security-Policy (scripts only from this server, no inline
 * script), and the app writes data into the page as text only.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { isIP, type AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { ReinsError } from "../../compiler/contract/problem.js";
import { ViewApi } from "./api.js";
import { RunData } from "./run-data.js";

export interface ViewOptions {
  runDirs: readonly string[];
  host?: string;
  port?: number;
  /** Listen on an address other than loopback (anyone who reaches it reads the runs). */
  allowRemote?: boolean;
}

export interface ViewHandle {
  url: string;
  port: number;
  close(): Promise<void>;
}

const WEB = fileURLToPath(new URL("./web/", import.meta.url));
const STATIC: Record<string, { file: string; type: string }> = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/charts.js": { file: "charts.js", type: "text/javascript; charset=utf-8" },
  "/dom.js": { file: "dom.js", type: "text/javascript; charset=utf-8" },
  "/rollout.js": { file: "rollout.js", type: "text/javascript; charset=utf-8" },
  "/style.css": { file: "style.css", type: "text/css; charset=utf-8" },
};
const TYPES = { json: "application/json; charset=utf-8", svg: "image/svg+xml", text: "text/plain; charset=utf-8" } as const;
/** Bytes of calls.jsonl indexed per turn of the event loop while warming up in the background. */
const WARM_BYTES = 4 * 1024 * 1024;
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** True for an address only this machine reaches: 127.0.0.0/8, ::1 (also IPv4-mapped), `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || /^(0{1,4}:){7}0{0,3}1$/.test(h) || /^::ffff:127\./.test(h) || /^(0{1,4}:){5}ffff:127\./.test(h);
  return false;
}

/** Check the run directories and start serving them. */
export async function startViewServer(options: ViewOptions): Promise<ViewHandle> {
  const host = options.host ?? "127.0.0.1";
  if (!isLoopbackHost(host) && !options.allowRemote) {
    throw new ReinsError(
      "ViewRemoteBind",
      `reins view would listen on ${host}, which is not a loopback address: anyone who can reach it could read these runs (prompts, completions, harness output, workspace diffs) without a password.`,
    );
  }
  for (const dir of options.runDirs) {
    if (!RunData.isRunDirectory(dir)) {
      throw new ReinsError("ViewRunNotFound", `${dir} is not a run directory (no plan.json, manifest.json, rollouts.jsonl or summary.json in it).`);
    }
  }
  const runs = options.runDirs.map((d) => new RunData(d));
  const api = new ViewApi(runs);
  const files = new Map<string, Buffer>();
  for (const [path, { file }] of Object.entries(STATIC)) files.set(path, readFileSync(WEB + file));
  let port = 0;
  const allowedHosts = () =>
    new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `${host}:${port}`, host.includes(":") ? `[${host}]:${port}` : ""]);
  const anyHost = host === "0.0.0.0" || host === "::";

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const headers = { "content-security-policy": CSP, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "cache-control": "no-store" };
    if (!anyHost && !allowedHosts().has(req.headers.host ?? "")) {
      res.writeHead(421, { ...headers, "content-type": TYPES.text }).end("misdirected request\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { ...headers, "content-type": TYPES.text, allow: "GET, HEAD" }).end("method not allowed\n");
      return;
    }
    const url = new URL(req.url ?? "/", "http://view.invalid");
    if (url.pathname === "/favicon.ico") {
      res.writeHead(204, headers).end();
      return;
    }
    const asset = STATIC[url.pathname];
    if (asset) {
      res.writeHead(200, { ...headers, "content-type": asset.type }).end(req.method === "HEAD" ? undefined : files.get(url.pathname));
      return;
    }
    if (!url.pathname.startsWith("/api/")) {
      res.writeHead(404, { ...headers, "content-type": TYPES.text }).end("not found\n");
      return;
    }
    // The raw path, so an encoded slash (%2F) stays inside its segment.
    const rawPath = (req.url ?? "/").split("?")[0];
    let answer;
    try {
      answer = await api.answer(rawPath, url.searchParams);
    } catch (err) {
      answer = { status: 500, type: "json" as const, body: JSON.stringify({ error: (err as Error).message }) };
    }
    res.writeHead(answer.status, { ...headers, "content-type": TYPES[answer.type] }).end(req.method === "HEAD" ? undefined : answer.body);
    warmCalls();
  };
  // After the first answer (the overview's first paint comes first), index calls.jsonl in the
  // background, a few MB per turn of the event loop so that requests keep being answered in
  // between; later it grows incrementally. Then load the tokenizers.
  let warmed = false;
  const warmCalls = () => {
    if (warmed) return;
    warmed = true;
    const step = () => {
      if (runs.map((run) => run.indexCallsSome(WARM_BYTES)).some((more) => more)) setTimeout(step, 5).unref();
      else void api.warmTokenizers();
    };
    setTimeout(step, 100).unref();
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
