// reins-agent's MCP client against a real SDK streamable-HTTP server on loopback that requires the
// bearer key: tools listed as <server>__<tool>, calls answered with the text content.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
// @ts-expect-error plain .mjs without types
import { connectMcp } from "../../src/runtime/harness/reins-agent/mcp.mjs";

const seen: string[] = [];
const httpServer = http.createServer(async (req, res) => {
  if (req.headers.authorization !== "Bearer sk-1") {
    res.writeHead(401).end();
    return;
  }
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
  if (body?.method) seen.push(body.method);
  const server = new McpServer({ name: "echo", version: "1.0.0" });
  server.registerTool("echo", { description: "Echo", inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: "text", text: `echo: ${text}` }],
  }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
});
await new Promise<void>((r) => httpServer.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp/echo`;
afterAll(() => new Promise<void>((r) => httpServer.close(() => r())));

describe("reins-agent MCP client", () => {
  it("offers server__tool and returns the text of a call", async () => {
    const mcp = await connectMcp(JSON.stringify([{ name: "srv", url, tools: null }]), "sk-1", () => {});
    expect(mcp.schemas.map((s: { function: { name: string } }) => s.function.name)).toEqual(["srv__echo"]);
    expect(mcp.owns("srv__echo")).toBe(true);
    expect(mcp.owns("write_file")).toBe(false);
    expect(await mcp.call("srv__echo", '{"text":"hi"}')).toBe("echo: hi");
    expect(await mcp.call("srv__echo", "{bad")).toMatch(/^error: /);
    await mcp.close();
    expect(seen).toEqual(expect.arrayContaining(["initialize", "tools/list", "tools/call"]));
  });

  it("fails to connect without the right key", async () => {
    await expect(connectMcp(JSON.stringify([{ name: "srv", url, tools: null }]), "wrong", () => {})).rejects.toThrow();
  });
});
