// The shipped stdio MCP servers (web search over a local corpus, the ticket store), driven as a
// harness's MCP client would drive them: the SDK's Client over a stdio transport to `node server.mjs`.
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { tempDir } from "../temp.js";

const SERVERS = path.resolve("src/runtime/mcp/servers");
const open: Client[] = [];

afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
});

async function connect(script: string, cwd: string, args: string[] = []): Promise<Client> {
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [path.join(SERVERS, script), ...args],
      cwd,
      env: { PATH: process.env.PATH ?? "" },
      stderr: "pipe",
    }),
  );
  open.push(client);
  return client;
}

function textOf(result: unknown): string {
  const content = (result as { content: { type: string; text: string }[] }).content;
  return content.map((c) => c.text).join("");
}

describe("web-search.mjs", () => {
  function corpusDir(): string {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, "corpus", "sub"), { recursive: true });
    fs.writeFileSync(path.join(dir, "corpus", "paris.md"), "# Paris\nParis is the capital of France. The Eiffel tower stands in Paris.\n");
    fs.writeFileSync(path.join(dir, "corpus", "sub", "berlin.txt"), "Berlin\nBerlin is the capital of Germany.\n");
    fs.writeFileSync(path.join(dir, "corpus", "a-same.md"), "Same\nrivers and lakes\n");
    fs.writeFileSync(path.join(dir, "corpus", "b-same.md"), "Same\nrivers and lakes\n");
    fs.writeFileSync(path.join(dir, "corpus", "ignored.bin"), "capital capital capital");
    return dir;
  }

  it("lists search and fetch, ranks by BM25 and fetches by id", async () => {
    const client = await connect("web-search.mjs", corpusDir());
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["fetch", "search"]);
    const hits = JSON.parse(textOf(await client.callTool({ name: "search", arguments: { query: "Eiffel capital" } })));
    expect(hits.map((h: { id: string }) => h.id)).toEqual(["paris.md", "sub/berlin.txt"]);
    expect(hits[0].title).toBe("Paris");
    expect(hits[0].snippet).toContain("Eiffel");
    expect(textOf(await client.callTool({ name: "fetch", arguments: { id: "sub/berlin.txt" } }))).toContain("capital of Germany");
    const missing = await client.callTool({ name: "fetch", arguments: { id: "nope" } });
    expect(missing.isError).toBe(true);
  });

  it("breaks ties by id, honours limit, and refuses invalid input", async () => {
    const client = await connect("web-search.mjs", corpusDir());
    const hits = JSON.parse(textOf(await client.callTool({ name: "search", arguments: { query: "rivers", limit: 1 } })));
    expect(hits.map((h: { id: string }) => h.id)).toEqual(["a-same.md"]);
    const bad = await client.callTool({ name: "search", arguments: { query: "x", limit: 1000 } });
    expect(bad.isError).toBe(true);
  });

  it("reads a JSONL corpus given as an argument", async () => {
    const dir = tempDir();
    const file = path.join(dir, "docs.jsonl");
    fs.writeFileSync(
      file,
      [
        { id: "d1", title: "Tea", text: "Green tea and black tea." },
        { id: "d2", title: "Coffee", text: "Espresso is coffee." },
      ]
        .map((d) => JSON.stringify(d))
        .join("\n"),
    );
    const client = await connect("web-search.mjs", dir, [file]);
    const hits = JSON.parse(textOf(await client.callTool({ name: "search", arguments: { query: "espresso" } })));
    expect(hits).toHaveLength(1);
    expect(hits[0]).toMatchObject({ id: "d2", title: "Coffee" });
  });
});

describe("tickets.mjs", () => {
  it("creates, lists, updates and gets tickets, persisting them in tickets.json", async () => {
    const dir = tempDir();
    const client = await connect("tickets.mjs", dir);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["create_ticket", "get_ticket", "list_tickets", "update_ticket"]);
    const t1 = JSON.parse(textOf(await client.callTool({ name: "create_ticket", arguments: { title: "Printer jam", priority: "high" } })));
    expect(t1).toEqual({ id: "T-1", title: "Printer jam", body: "", priority: "high", status: "open" });
    await client.callTool({ name: "create_ticket", arguments: { title: "VPN down", body: "since 9am" } });
    await client.callTool({ name: "update_ticket", arguments: { id: "T-1", status: "resolved" } });
    const open = JSON.parse(textOf(await client.callTool({ name: "list_tickets", arguments: { status: "open" } })));
    expect(open.map((t: { id: string }) => t.id)).toEqual(["T-2"]);
    expect(JSON.parse(textOf(await client.callTool({ name: "get_ticket", arguments: { id: "T-2" } }))).body).toBe("since 9am");
    const saved = JSON.parse(fs.readFileSync(path.join(dir, "tickets.json"), "utf8"));
    expect(saved.tickets.map((t: { id: string; status: string }) => [t.id, t.status])).toEqual([
      ["T-1", "resolved"],
      ["T-2", "open"],
    ]);
  });

  it("refuses invalid input and unknown ids, and starts from a file the task wrote", async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, "tickets.json"), JSON.stringify({ tickets: [{ id: "T-7", title: "Old", body: "", priority: "low", status: "open" }] }));
    const client = await connect("tickets.mjs", dir);
    expect((await client.callTool({ name: "update_ticket", arguments: { id: "T-7", status: "bogus" } })).isError).toBe(true);
    expect((await client.callTool({ name: "get_ticket", arguments: { id: "T-99" } })).isError).toBe(true);
    expect((await client.callTool({ name: "create_ticket", arguments: { title: "" } })).isError).toBe(true);
    expect(JSON.parse(textOf(await client.callTool({ name: "create_ticket", arguments: { title: "New" } }))).id).toBe("T-8");
  });
});
