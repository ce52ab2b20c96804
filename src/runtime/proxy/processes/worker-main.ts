/**
 * One of several proxy processes (./front.ts): a whole proxy on a loopback port of its own that
 * serves the rollouts the front gives it, on the connections the front hands over. Records go to
 * the front as they are handed over; MCP requests go to the front's MCP server; a request for a
 * rollout another process serves is relayed to it. Ends when the front says so or is gone.
 */
import type { Socket } from "node:net";
import { ReinsError } from "../../../compiler/contract/problem.js";
import { startProxyServer } from "../server.js";
import { type FromWorker, ownerOfPath, packRecord, type ToWorker } from "./protocol.js";
import { relayRequest } from "./relay.js";
import { RelayedEngine } from "./relayed-engine.js";

function tell(msg: FromWorker): void {
  process.send?.(msg);
}

async function serve(init: Extract<ToWorker, { t: "init" }>): Promise<void> {
  const { index, count, options } = init;
  const routes = new Map<string, number>();
  let peers: string[] = [];
  let mcpUrl = "";
  const ownerOf = (path: string): number | undefined => routes.get(path) ?? (options.sharedKey !== undefined ? ownerOfPath(path, count) : undefined);
  const engine = options.frontEngine ? new RelayedEngine(options.frontEngine, (msg) => tell(msg)) : undefined;
  if (engine) process.on("disconnect", () => engine.failAll("the proxy's front process is gone"));
  const { handle, server } = await startProxyServer(
    {
      model: options.model,
      host: "127.0.0.1",
      port: 0,
      keepRecords: false,
      env: options.env,
      ...(engine ? { engine } : {}),
      ...(options.sharedKey !== undefined ? { sharedKey: options.sharedKey } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
    },
    {
      peerOf(path) {
        const owner = ownerOf(path);
        return owner === undefined || owner === index ? undefined : peers[owner];
      },
      onRecord: (path, record) => tell({ t: "record", path, record: packRecord(record) }),
    },
  );
  process.on("message", (msg: ToWorker, socket?: Socket) => {
    switch (msg.t) {
      case "gen-chunk":
      case "gen-done":
      case "gen-failed":
        engine?.answer(msg);
        return;
      case "conn":
        if (!socket) return;
        server.emit("connection", socket);
        socket.emit("data", Buffer.from(msg.head.buffer, msg.head.byteOffset, msg.head.byteLength));
        socket.resume();
        return;
      case "peers":
        peers = msg.urls;
        mcpUrl = msg.mcpUrl;
        return;
      case "register":
        handle.registerRollout(msg.path, msg.opts);
        return;
      case "unregister":
        handle.unregisterRollout(msg.path);
        return;
      case "route":
        routes.set(msg.path, msg.owner);
        return;
      case "unroute":
        routes.delete(msg.path);
        return;
      case "mcp":
        handle.attachMcp(msg.path, msg.attached ? (_name, req, res) => relayRequest(mcpUrl, req, res).then(() => true) : undefined);
        return;
      case "settle":
        // Records are sent as they are handed over, on this same channel: all before this answer.
        tell({ t: "settled", id: msg.id });
        return;
      case "close":
        void handle.close().finally(() => process.exit(0));
        return;
      default:
        return;
    }
  });
  tell({ t: "ready", url: handle.url, ...(handle.engineInfo ? { engineInfo: handle.engineInfo } : {}) });
}

process.on("disconnect", () => process.exit(0));
process.once("message", (msg: ToWorker) => {
  if (msg.t !== "init") return void process.exit(1);
  serve(msg).catch((err: unknown) => {
    const e = err as Error;
    tell(
      e instanceof ReinsError
        ? { t: "failed", message: e.message, code: e.code, ...(e.hint ? { hint: e.hint } : {}) }
        : { t: "failed", message: e?.message ?? String(err) },
    );
    setTimeout(() => process.exit(1), 100);
  });
});
// Messages that arrive before a listener are lost: the front sends `init` when asked.
tell({ t: "hello" });
