// A harness that attacks its MCP servers over raw HTTP (no SDK, no model): it calls a tool outside
// the task's allow-list, comes without its key or with a forged one, knocks on a server the
// rollout does not have and on another rollout's path with its own key, then calls the one allowed
// tool. What each attempt got is written to report.json in the workspace for the test to read.
import { writeFileSync } from "node:fs";

const servers = JSON.parse(process.env.MCP_SERVERS ?? "[]");
const key = process.env.MCP_KEY ?? "";
const url = servers[0].url;

async function rpc(target, body, { session, auth = `Bearer ${key}` } = {}) {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", ...(auth ? { authorization: auth } : {}), ...(session ? { "mcp-session-id": session } : {}) };
  const r = await fetch(target, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await r.text();
  const data = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
  return { status: r.status, session: r.headers.get("mcp-session-id"), message: data[0] ?? (text.startsWith("{") ? JSON.parse(text) : text) };
}

const call = (id, name, args) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
const init = await rpc(url, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "hostile", version: "1" } } });
const session = init.session;
await rpc(url, { jsonrpc: "2.0", method: "notifications/initialized" }, { session });
const report = {
  init: init.status,
  listed: (await rpc(url, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { session })).message,
  refused: (await rpc(url, call(3, "update_ticket", { id: "T-1", status: "closed" }), { session })).message,
  noKey: (await rpc(url, call(4, "create_ticket", { title: "no key" }), { session, auth: "" })).status,
  forgedKey: (await rpc(url, call(5, "create_ticket", { title: "forged" }), { session, auth: "Bearer reins-forged" })).status,
  unknownServer: (await rpc(url.replace(/\/mcp\/[^/]+$/, "/mcp/nope"), call(6, "create_ticket", { title: "x" }))).status,
  otherRollout: (await rpc(url.replace(/-a(\d+)\//, (_, a) => `-a${a === "0" ? "1" : "0"}/`), call(7, "create_ticket", { title: "x" }))).status,
  allowed: (await rpc(url, call(8, "create_ticket", { title: "Printer on fire", priority: "high" }), { session })).message,
};
writeFileSync("report.json", JSON.stringify(report, null, 1));
