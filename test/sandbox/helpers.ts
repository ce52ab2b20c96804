/** Shared helpers for sandbox tests: host-side process search, a stand-in proxy, temp dirs. */
import http from "node:http";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { tempDir } from "../temp.js";
import { createSocketBridge, type SocketBridge } from "../../src/runtime/sandbox/socket-bridge.js";

/** Host pids whose command line contains `marker` (a unique argument such as "987.654"). */
export function hostPidsWith(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state !== "Z" && cmdline.includes(marker)) out.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return out;
}

export { tempDir } from "../temp.js";

/** Numbered fresh directories `<prefix>-<n>` under one temp directory of the test file. */
export function freshDirs(prefix: string): (name: string) => string {
  const root = tempDir(`${prefix}-`);
  let n = 0;
  return (name) => {
    const dir = path.join(root, `${name}-${n++}`);
    mkdirSync(dir);
    return dir;
  };
}

export function uniqueMarker(): string {
  return `${Math.floor(Math.random() * 9000) + 1000}.${Math.floor(Math.random() * 900) + 100}`;
}

export interface FakeProxy {
  port: number;
  bridge: SocketBridge;
  requests: string[];
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 standing in for the proxy, with a per-rollout Unix socket bridge. */
export async function startFakeProxy(socketPath: string): Promise<FakeProxy> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? "");
    res.end(`proxy-ok ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const bridge = await createSocketBridge(socketPath, "127.0.0.1", port);
  return {
    port,
    bridge,
    requests,
    async close() {
      await bridge.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A plain TCP listener on 127.0.0.1 that is NOT the proxy. */
export async function startOtherServer(): Promise<{ port: number; hits: number; close(): Promise<void> }> {
  const state = { hits: 0 };
  const server = http.createServer((_req, res) => {
    state.hits++;
    res.end("other");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    get hits() {
      return state.hits;
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Node one-liner that fetches a URL and prints the body or the error code. */
export function fetchScript(url: string): string[] {
  return ["node", "-e", "fetch(process.argv[1]).then(r=>r.text()).then(t=>console.log('BODY '+t),e=>console.log('ERR '+(e.cause?.code??e.message)))", url];
}
