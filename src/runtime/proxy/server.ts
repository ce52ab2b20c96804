/**
 * The serving proxy: a plain node:http server speaking the three model API dialects under a
 * per-rollout path, `/r/<path>/v1/...` (also without `v1`, for clients that append only the
 * endpoint path). See ./api.ts for the contract and ./call.ts for one call's stages.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Dialect } from "../../compiler/contract/plan.js";
import type { Engine } from "../engines/engine.js";
import { createEngine } from "../engines/registry.js";
import { loadModelRuntime, type ModelRuntime } from "../model/model-runtime.js";
import { appendRecords, type CallRecord } from "../records/index.js";
import type { ProxyHandle, ProxyOptions, RolloutRegistration } from "./api.js";
import { createTokenizePool } from "../model/tokenize-pool.js";
import { closeAfterAnswer, handleModelCall, sendJson, type CallDeps } from "./call.js";
import { passThroughCall, type PassthroughDeps } from "./passthrough.js";
import { countTokens } from "./count-tokens.js";
import { DIALECT_HANDLERS } from "./dialects/index.js";
import { nowSeconds } from "./ids.js";
import { resolveLimits } from "./limits.js";
import { type Rollout, RolloutTable } from "./rollouts.js";

type Route =
  | { kind: "call"; dialect: Dialect }
  | { kind: "count-tokens" }
  | { kind: "models"; id?: string }
  | { kind: "probe" }
  | { kind: "mcp"; name: string }
  | { kind: "unknown"; dialect: Dialect };

/** Start the proxy. Rejects with ModelLoadError when the model's tokenizer or template is unusable. */
export async function startProxy(options: ProxyOptions): Promise<ProxyHandle> {
  const limits = resolveLimits(options.model, { ...options.model.proxy, ...options.limits });
  const table = new RolloutTable(options.sharedKey);
  const record = (rollout: Rollout, record: CallRecord) => {
    if (options.keepRecords !== false) rollout.records.push(record);
    if (options.recordFile !== undefined) appendRecords(options.recordFile, [record]);
    options.onRecord?.(record);
  };
  const hosted = options.model.engine.type === "hosted" ? options.model.engine : undefined;
  // A hosted policy is passed through (./passthrough.ts): no tokenizer, template or engine.
  const passthrough: PassthroughDeps | undefined = hosted ? { api: hosted, sampling: options.model.sampling, limits, env: options.env ?? process.env, record } : undefined;
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

  return {
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
  };
}

const ENDPOINTS: Record<Dialect, string> = { "anthropic-messages": "/messages", "openai-chat": "/chat/completions", "openai-responses": "/responses" };

/** The token path's parts (TITO): the model's tokenizer and template, the engine, the tokenize pool. */
async function startTokenPath(options: ProxyOptions, limits: ReturnType<typeof resolveLimits>, record: CallDeps["record"]): Promise<{ deps: CallDeps; close(): Promise<void> }> {
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

/**
 * `/r/<path>/mcp/<name>`: MCP's streamable HTTP to one of the rollout's MCP servers, with the
 * rollout's own key (another rollout's key, or none, is refused like a model call's).
 */
async function handleMcp(rollout: Rollout | undefined, name: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!rollout) {
    req.resume();
    closeAfterAnswer(res);
    sendJson(res, 401, { jsonrpc: "2.0", error: { code: -32001, message: "invalid x-api-key or bearer token for this rollout" }, id: null });
    return;
  }
  if (!rollout.mcp || !(await rollout.mcp(name, req, res))) {
    req.resume();
    sendJson(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: `this rollout has no MCP server named ${name}` }, id: null });
  }
}

/** `/r/<path>/v1/<endpoint>` (v1 optional) → the rollout path and the route. */
export function parsePath(method: string, rawUrl: string): { path?: string; route: Route } {
  const fast = method === "POST" ? parseCallPath(rawUrl) : undefined;
  if (fast) return fast;
  const urlPath = rawUrl.split("?")[0]!.replace(/\/+$/, "");
  const m = /^\/r\/([^/]+)(\/.*)?$/.exec(urlPath);
  let rest = urlPath;
  let path: string | undefined;
  if (m) {
    try {
      path = decodeURIComponent(m[1]!);
    } catch {
      path = m[1]!;
    }
    rest = m[2] ?? "";
  }
  const mcp = path !== undefined ? /^\/mcp\/([a-z][a-z0-9_-]{0,31})$/.exec(rest) : null;
  if (mcp) return { path: path!, route: { kind: "mcp", name: mcp[1]! } };
  rest = rest.replace(/^\/v1(?=\/|$)/, "");
  const isGet = method === "GET" || method === "HEAD";
  if (isGet && (rest === "" || rest === "/health" || rest === "/healthz")) return { ...(path ? { path } : {}), route: { kind: "probe" } };
  if (isGet && rest === "/models") return { ...(path ? { path } : {}), route: { kind: "models" } };
  const model = /^\/models\/(.+)$/.exec(rest);
  if (isGet && model) return { ...(path ? { path } : {}), route: { kind: "models", id: decodeURIComponent(model[1]!) } };
  const dialect: Dialect = /messages/.test(rest) ? "anthropic-messages" : /responses/.test(rest) ? "openai-responses" : "openai-chat";
  const withId = path ? { path } : {};
  if (method !== "POST" || path === undefined) return { ...withId, route: { kind: "unknown", dialect } };
  if (rest === "/messages/count_tokens") return { ...withId, route: { kind: "count-tokens" } };
  if (rest === "/messages") return { ...withId, route: { kind: "call", dialect: "anthropic-messages" } };
  if (rest === "/chat/completions") return { ...withId, route: { kind: "call", dialect: "openai-chat" } };
  if (rest === "/responses") return { ...withId, route: { kind: "call", dialect: "openai-responses" } };
  return { ...withId, route: { kind: "unknown", dialect } };
}

/** The model calls' exact endpoints (v1 optional); anything else takes parsePath's general way. */
const CALL_ROUTES = new Map<string, Route>([
  ["/messages/count_tokens", { kind: "count-tokens" }],
  ["/messages", { kind: "call", dialect: "anthropic-messages" }],
  ["/chat/completions", { kind: "call", dialect: "openai-chat" }],
  ["/responses", { kind: "call", dialect: "openai-responses" }],
]);
for (const [rest, route] of [...CALL_ROUTES]) CALL_ROUTES.set(`/v1${rest}`, route);

/** `POST /r/<path>/[v1/]<endpoint>` exactly, as every harness sends it: the same answer as parsePath's general way. */
function parseCallPath(rawUrl: string): { path: string; route: Route } | undefined {
  if (!rawUrl.startsWith("/r/")) return undefined;
  const slash = rawUrl.indexOf("/", 3);
  if (slash <= 3) return undefined;
  const route = CALL_ROUTES.get(rawUrl.slice(slash));
  if (!route) return undefined;
  const raw = rawUrl.slice(3, slash);
  if (!raw.includes("%")) return { path: raw, route };
  try {
    return { path: decodeURIComponent(raw), route };
  } catch {
    return { path: raw, route };
  }
}

function credentialOf(req: IncomingMessage): string | undefined {
  const key = req.headers["x-api-key"];
  if (typeof key === "string" && key.length > 0) return key;
  const auth = req.headers.authorization;
  if (typeof auth === "string") {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (m) return m[1]!.trim();
  }
  return undefined;
}

function modelObject(id: string): Record<string, unknown> {
  const created = nowSeconds();
  return { id, object: "model", type: "model", display_name: id, created, created_at: new Date(created * 1000).toISOString(), owned_by: "reins" };
}

function modelList(name: string): Record<string, unknown> {
  return { object: "list", data: [modelObject(name)], has_more: false, first_id: name, last_id: name };
}
