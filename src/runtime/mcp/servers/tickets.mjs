/**
 * A shipped stdio MCP server: a stateful ticket store.
 *
 * The tickets live in one JSON file (argv[2], else REINS_TICKETS_FILE, else `tickets.json` in the
 * working directory, i.e. the server's workspace), rewritten after every change, so a verifier reads
 * the final state from it. Each try gets a fresh server and workspace, so no state crosses rollouts.
 * A file already there (written by the task) is the initial state.
 *
 * Tools: `create_ticket` {title, body?, priority?}, `list_tickets` {status?}, `update_ticket` {id,
 * status}, `get_ticket` {id}. Ids are T-1, T-2, … in creation order; inputs are validated with zod.
 */
import fs from "node:fs";
import path from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const PRIORITIES = ["low", "medium", "high", "urgent"];
const STATUSES = ["open", "in_progress", "resolved", "closed"];

function load(file) {
  if (!fs.existsSync(file)) return { next: 1, tickets: [] };
  const state = JSON.parse(fs.readFileSync(file, "utf8"));
  const tickets = Array.isArray(state) ? state : (state.tickets ?? []);
  const next = state.next ?? tickets.reduce((m, t) => Math.max(m, Number(String(t.id).replace(/^T-/, "")) || 0), 0) + 1;
  return { next, tickets };
}

function save(file, state) {
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`);
  fs.renameSync(tmp, file);
}

function reply(value, isError = false) {
  return { content: [{ type: "text", text: typeof value === "string" ? value : JSON.stringify(value, null, 2) }], ...(isError ? { isError } : {}) };
}

function main() {
  const file = path.resolve(process.argv[2] ?? process.env.REINS_TICKETS_FILE ?? "tickets.json");
  const state = load(file);
  const find = (id) => state.tickets.find((t) => t.id === id);
  const missing = (id) => reply(`No ticket has the id ${JSON.stringify(id)}.`, true);
  const server = new McpServer({ name: "tickets", version: "1.0.0" });
  server.registerTool(
    "create_ticket",
    {
      description: `Create a ticket (status open). priority: ${PRIORITIES.join(", ")} (default medium). Returns the ticket with its id.`,
      inputSchema: { title: z.string().min(1).max(200), body: z.string().max(10_000).optional(), priority: z.enum(PRIORITIES).optional() },
    },
    async ({ title, body, priority }) => {
      const ticket = { id: `T-${state.next++}`, title, body: body ?? "", priority: priority ?? "medium", status: "open" };
      state.tickets.push(ticket);
      save(file, state);
      return reply(ticket);
    },
  );
  server.registerTool(
    "list_tickets",
    { description: "List tickets (id, title, priority, status), optionally only those with one status.", inputSchema: { status: z.enum(STATUSES).optional() } },
    async ({ status }) => reply(state.tickets.filter((t) => !status || t.status === status).map(({ id, title, priority, status: s }) => ({ id, title, priority, status: s }))),
  );
  server.registerTool(
    "update_ticket",
    { description: `Set a ticket's status: ${STATUSES.join(", ")}.`, inputSchema: { id: z.string().min(1).max(40), status: z.enum(STATUSES) } },
    async ({ id, status }) => {
      const ticket = find(id);
      if (!ticket) return missing(id);
      ticket.status = status;
      save(file, state);
      return reply(ticket);
    },
  );
  server.registerTool(
    "get_ticket",
    { description: "One ticket with its body.", inputSchema: { id: z.string().min(1).max(40) } },
    async ({ id }) => (find(id) ? reply(find(id)) : missing(id)),
  );
  return server.connect(new StdioServerTransport());
}

main().catch((e) => {
  process.stderr.write(`tickets: ${e?.message ?? e}\n`);
  process.exit(1);
});
