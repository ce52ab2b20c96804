// reins-agent's MCP client: the servers REINS_MCP_SERVERS lists ([{name, url, tools}]) are reached
// over streamable HTTP with REINS_API_KEY as bearer token; their tools are offered to the model as
// `<server>__<tool>` (reins-agent's own tool names have no "__", so the names cannot collide) and the
// model's calls of them return the text content of the result. The SDK is imported only when there
// are servers, so without them reins-agent loads exactly what it did before.

/** The connected servers: {schemas (chat tool schemas), owns(name), call(name, rawArguments), close()}. */
export async function connectMcp(serversJson, apiKey, log) {
  const servers = JSON.parse(serversJson);
  if (!Array.isArray(servers) || servers.length === 0) return undefined;
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  const clients = new Map();
  const routes = new Map();
  const schemas = [];
  for (const server of servers) {
    const client = new Client({ name: "reins-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } }));
    clients.set(server.name, client);
    const { tools } = await client.listTools();
    for (const tool of tools) {
      const name = `${server.name}__${tool.name}`;
      routes.set(name, { client, tool: tool.name });
      schemas.push({ type: "function", function: { name, description: tool.description ?? "", parameters: tool.inputSchema ?? { type: "object", properties: {} } } });
    }
    log(`mcp: ${server.name}: ${tools.length} tool(s)`);
  }
  return {
    schemas,
    owns: (name) => routes.has(name),
    async call(name, rawArguments) {
      const { client, tool } = routes.get(name);
      let args;
      try {
        args = rawArguments ? JSON.parse(rawArguments) : {};
      } catch {
        return `error: the arguments are not JSON: ${String(rawArguments).slice(0, 200)}`;
      }
      try {
        const result = await client.callTool({ name: tool, arguments: args });
        const text = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
        return result.isError ? `error: ${text}` : text;
      } catch (e) {
        return `error: ${e?.message ?? e}`;
      }
    },
    async close() {
      for (const client of clients.values()) await client.close().catch(() => {});
    },
  };
}
