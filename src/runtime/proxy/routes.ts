/**
 * The proxy's routes: `/r/<path>/[v1/]<endpoint>` → the rollout path and what is asked (a model
 * call in one of the three dialects, token counting, models, a probe, an MCP server).
 */
import type { Dialect } from "../../compiler/contract/plan.js";

export type Route =
  | { kind: "call"; dialect: Dialect }
  | { kind: "count-tokens" }
  | { kind: "models"; id?: string }
  | { kind: "probe" }
  | { kind: "mcp"; name: string }
  | { kind: "unknown"; dialect: Dialect }
  /** A path the proxy cannot read (a malformed percent-escape): the client's mistake, answered 400. */
  | { kind: "bad-path"; dialect: Dialect; message: string };

/**
 * `/r/<path>/v1/<endpoint>` (v1 optional) → the rollout path and the route. Never throws: whatever
 * a client sends (it is read before any key is checked) is a route, `bad-path` when part of it
 * cannot be decoded.
 */
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
  if (isGet && model) {
    const id = decoded(model[1]!);
    if (id === undefined)
      return {
        ...(path ? { path } : {}),
        route: {
          kind: "bad-path",
          dialect: "openai-chat",
          message: `the model id in ${JSON.stringify(rawUrl.split("?")[0]!.slice(0, 200))} is not valid percent-encoding`,
        },
      };
    return { ...(path ? { path } : {}), route: { kind: "models", id } };
  }
  const dialect: Dialect = /messages/.test(rest) ? "anthropic-messages" : /responses/.test(rest) ? "openai-responses" : "openai-chat";
  const withId = path ? { path } : {};
  if (method !== "POST" || path === undefined) return { ...withId, route: { kind: "unknown", dialect } };
  if (rest === "/messages/count_tokens") return { ...withId, route: { kind: "count-tokens" } };
  if (rest === "/messages") return { ...withId, route: { kind: "call", dialect: "anthropic-messages" } };
  if (rest === "/chat/completions") return { ...withId, route: { kind: "call", dialect: "openai-chat" } };
  if (rest === "/responses") return { ...withId, route: { kind: "call", dialect: "openai-responses" } };
  return { ...withId, route: { kind: "unknown", dialect } };
}

/** `decodeURIComponent`, or undefined for text with a malformed percent-escape (`%E0%A4%A`, `%zz`, `%`). */
function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
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
