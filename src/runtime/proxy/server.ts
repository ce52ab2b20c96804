/**
 * The serving proxy: a plain node:http server speaking the three model API dialects under a
 * per-rollout path, `/r/<path>/v1/...` (also without `v1`, for clients that append only the
 * endpoint path). See ./api.ts for the contract and ./call.ts for one call's stages.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Dialect } from "../../compiler/contract/plan.js";
import type { Engine } from "../engines/engine.js";
import { createEngine } from "../engines/registry.js";
import { loadModelRuntime } from "../model/model-runtime.js";
import { appendRecords, type CallRecord } from "../records/index.js";
import type { ProxyHandle, ProxyOptions, RolloutRegistration } from "./api.js";
import { createTokenizePool } from "../model/tokenize-pool.js";
import { closeAfterAnswer, handleModelCall, sendJson, type CallDeps } from "./call.js";
import { passThroughCall, type PassthroughDeps } from "./passthrough.js";
import { countTokens } from "./count-tokens.js";
import { DIALECT_HANDLERS } from "./dialects/index.js";
import { nowSeconds } from "./ids.js";

export { parsePath } from "./routes.js";
import { proxyLimitsOf, type ProxyLimits } from "./limits.js";
import { parsePath } from "./routes.js";
import { startProxyProcesses } from "./processes/front.js";
import { relayRequest } from "./processes/relay.js";
import { handleMcp } from "./mcp-route.js";
import { credentialOf, type Rollout, RolloutTable } from "./rollouts.js";

/**
 * Start the proxy: one process, or (`processes` > 1, the model's `proxy.processes`) several behind
 * the one port, each rollout served by one of them (./processes/front.ts). Rejects with
 * ModelLoadError when the model's tokenizer or template is unusable.
 */
export async function startProxy(options: ProxyOptions): Promise<ProxyHandle> {
  const processes = options.processes ?? options.model.proxy?.processes ?? 1;
  if (processes > 1) return startProxyProcesses(options, processes);
  return (await startProxyServer(options)).handle;
}

/** How a proxy process works beside others (./processes/worker-main.ts); absent for a proxy alone. */
export interface ServerHooks {
  /** The base URL of the process that serves this path, when it is another one (the request is relayed there). */
  peerOf(path: string): string | undefined;
  /** Each record with its rollout's path, as it is handed over. */
  onRecord(path: string, record: CallRecord): void;
}

/** One proxy process: the HTTP server and its handle. */
export async function startProxyServer(options: ProxyOptions, hooks?: ServerHooks): Promise<{ handle: ProxyHandle; server: Server }> {
  const limits = proxyLimitsOf(options.model, options.limits);
  const table = new RolloutTable(options.sharedKey);
  const record = (rollout: Rollout, record: CallRecord) => {
    if (options.keepRecords !== false) rollout.records.push(record);
    if (options.recordFile !== undefined) appendRecords(options.recordFile, [record]);
    options.onRecord?.(record);
    hooks?.onRecord(rollout.path, record);
  };
  const hosted = options.model.engine.type === "hosted" ? options.model.engine : undefined;
  // A hosted policy is passed through (./passthrough.ts): no tokenizer, template or engine.
  const passthrough: PassthroughDeps | undefined = hosted
    ? { api: hosted, sampling: options.model.sampling, limits, env: options.env ?? process.env, record }
    : undefined;
  const tokens = hosted ? undefined : await startTokenPath(options, limits, record);

  // Idle connections and slow headers are cut after idleTimeoutMs (checked every second or so);
  // slow bodies after bodyTimeoutMs (./http-body.ts). Generating has no time limit: it may take minutes.
  const checkEvery = Math.max(250, Math.min(1000, Math.floor(limits.idleTimeoutMs / 4)));
  const server = createServer({ connectionsCheckingInterval: checkEvery }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      // A bug, not a user mistake: answer 500 and keep serving.
      process.emitWarning(`reins proxy: internal error: ${(err as Error)?.stack ?? String(err)}`);
      if (!res.headersSent) sendJson(res, 500, { error: { message: "internal proxy error", type: "server_error" } });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = limits.idleTimeoutMs;
  server.headersTimeout = limits.idleTimeoutMs;
  server.requestTimeout = 0; // the body has its own deadline; generating has none
  server.on("clientError", (_err, socket) => socket.destroy());

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { path, route } = parsePath(req.method ?? "GET", req.url ?? "/");
    const peer = path === undefined ? undefined : hooks?.peerOf(path);
    if (peer !== undefined) {
      await relayRequest(peer, req, res);
      return;
    }
    if (route.kind === "probe") {
      if (req.method === "HEAD") res.writeHead(200).end();
      else sendJson(res, 200, { ok: true, service: "reins-proxy" });
      return;
    }
    if (route.kind === "models") {
      sendJson(res, 200, route.id !== undefined ? modelObject(route.id) : modelList(options.model.name));
      return;
    }
    if (route.kind === "mcp") {
      await handleMcp(path === undefined ? undefined : table.authorize(path, credentialOf(req)), route.name, req, res);
      return;
    }
    if (route.kind === "bad-path") {
      req.resume();
      closeAfterAnswer(res);
      const { status, body } = DIALECT_HANDLERS[route.dialect].errorResponse("bad-request", route.message);
      sendJson(res, status, body);
      return;
    }
    const dialect = DIALECT_HANDLERS[route.kind === "count-tokens" ? "anthropic-messages" : route.dialect];
    const rollout = path === undefined ? undefined : table.authorize(path, credentialOf(req));
    if (route.kind === "unknown") {
      closeAfterAnswer(res);
      const { status, body } = dialect.errorResponse("not-found", `no route for ${req.method} ${req.url?.split("?")[0]}`);
      sendJson(res, status, body);
      return;
    }
    if (!rollout) {
      req.resume();
      closeAfterAnswer(res);
      const { status, body } = dialect.errorResponse("auth", "invalid x-api-key or bearer token for this rollout");
      sendJson(res, status, body);
      return;
    }
    if (passthrough) {
      await passThroughCall(passthrough, rollout, dialect, route.kind === "count-tokens" ? "/messages/count_tokens" : ENDPOINTS[route.dialect], req, res);
      return;
    }
    if (route.kind === "count-tokens") {
      await countTokens(tokens!.deps, rollout, req, res);
      return;
    }
    await handleModelCall(tokens!.deps, rollout, dialect, req, res);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  const proxy: ProxyHandle = {
    url,
    port: address.port,
    registerRollout(path, opts = {}): RolloutRegistration {
      const r = table.register(path, opts);
      return { path, rolloutId: r.rolloutId, try: r.try, apiKey: r.apiKey, baseUrl: `${url}/r/${encodeURIComponent(path)}` };
    },
    unregisterRollout: (path) => table.unregister(path),
    attachMcp(path, handler) {
      table.attachMcp(path, handler);
    },
    records: (path) => table.records(path),
    ...(tokens?.deps.engine.info ? { engineInfo: tokens.deps.engine.info() } : {}),
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await tokens?.close();
    },
    settle: () => Promise.resolve(),
  };
  return { handle: proxy, server };
}

const ENDPOINTS: Record<Dialect, string> = { "anthropic-messages": "/messages", "openai-chat": "/chat/completions", "openai-responses": "/responses" };

/** The token path's parts (TITO): the model's tokenizer and template, the engine, the tokenize pool. */
async function startTokenPath(options: ProxyOptions, limits: ProxyLimits, record: CallDeps["record"]): Promise<{ deps: CallDeps; close(): Promise<void> }> {
  const runtime = await loadModelRuntime(options.model);
  const ownsEngine = options.engine === undefined;
  const engine: Engine = options.engine ?? (await createEngine(options.model.engine, { model: options.model, runtime }));
  const pool = createTokenizePool(options.model.tokenizer!, runtime.tokenizer);
  return {
    deps: { model: options.model, runtime, engine, pool, limits, record },
    async close() {
      await pool.close();
      if (ownsEngine) await engine.close?.();
    },
  };
}

function modelObject(id: string): Record<string, unknown> {
  const created = nowSeconds();
  return { id, object: "model", type: "model", display_name: id, created, created_at: new Date(created * 1000).toISOString(), owned_by: "reins" };
}

function modelList(name: string): Record<string, unknown> {
  return { object: "list", data: [modelObject(name)], has_more: false, first_id: name, last_id: name };
}
