/**
 * A shipped stdio MCP server: offline, deterministic search over a local corpus.
 *
 * The corpus is a directory of text/markdown files (each file one document, id = its path relative
 * to the directory, title = its first non-empty line without leading `#`) or one JSONL file (one
 * `{id, title?, text}` object per line). Where it is comes from argv[2], else REINS_SEARCH_CORPUS,
 * else `corpus` in the working directory (the server's workspace). It is read once, at start.
 *
 * Tools: `search` {query, limit?} ranks documents by BM25 (ties by id, so results never depend on
 * the file system's order) and returns title, id and a snippet per hit; `fetch` {id} returns the
 * document's text. Every output is bounded (MAX_HITS hits, SNIPPET_CHARS per snippet, FETCH_CHARS per
 * fetched document) so a tool result can never flood the harness's context.
 */
import fs from "node:fs";
import path from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const MAX_HITS = 20;
const SNIPPET_CHARS = 240;
const FETCH_CHARS = 20_000;
const TEXT_FILE = /\.(md|markdown|txt|text|rst)$/i;
const K1 = 1.2;
const B = 0.75;

/** Lower-case word tokens (letters and digits, any script). */
function tokenize(text) {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function titleOf(text, fallback) {
  const line = text.split("\n").find((l) => l.trim() !== "");
  return line ? line.replace(/^#+\s*/, "").trim().slice(0, 200) : fallback;
}

function walk(dir, root, out) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, root, out);
    else if (entry.isFile() && TEXT_FILE.test(entry.name)) {
      const text = fs.readFileSync(full, "utf8");
      const id = path.relative(root, full).split(path.sep).join("/");
      out.push({ id, title: titleOf(text, id), text });
    }
  }
  return out;
}

/** The documents of a corpus directory or JSONL file. */
function loadCorpus(where) {
  const stat = fs.statSync(where);
  if (stat.isDirectory()) return walk(where, where, []);
  return fs
    .readFileSync(where, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((line, i) => {
      const doc = JSON.parse(line);
      const id = String(doc.id ?? i);
      const text = String(doc.text ?? doc.body ?? "");
      return { id, title: String(doc.title ?? titleOf(text, id)), text };
    });
}

/** A BM25 index over `docs`; `search` returns [{doc, score}] best first, ties by id. */
function buildIndex(docs) {
  const terms = docs.map((d) => {
    const counts = new Map();
    for (const t of tokenize(`${d.title}\n${d.text}`)) counts.set(t, (counts.get(t) ?? 0) + 1);
    let length = 0;
    for (const c of counts.values()) length += c;
    return { counts, length };
  });
  const df = new Map();
  for (const { counts } of terms) for (const t of counts.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  const avg = terms.reduce((s, t) => s + t.length, 0) / Math.max(1, terms.length);
  return {
    search(query, limit) {
      const q = [...new Set(tokenize(query))];
      const scored = [];
      docs.forEach((doc, i) => {
        let score = 0;
        for (const t of q) {
          const f = terms[i].counts.get(t);
          if (!f) continue;
          const n = df.get(t);
          const idf = Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
          score += (idf * f * (K1 + 1)) / (f + K1 * (1 - B + (B * terms[i].length) / (avg || 1)));
        }
        if (score > 0) scored.push({ doc, score });
      });
      scored.sort((a, b) => b.score - a.score || (a.doc.id < b.doc.id ? -1 : a.doc.id > b.doc.id ? 1 : 0));
      return scored.slice(0, limit);
    },
  };
}

/** A window of `text` around the first query term it contains, on one line. */
function snippetOf(text, query) {
  const flat = text.replace(/\s+/g, " ").trim();
  const lower = flat.toLowerCase();
  const at = tokenize(query).map((t) => lower.indexOf(t)).filter((i) => i >= 0).sort((a, b) => a - b)[0] ?? 0;
  const start = Math.max(0, at - SNIPPET_CHARS / 4);
  const body = flat.slice(start, start + SNIPPET_CHARS);
  return `${start > 0 ? "…" : ""}${body}${start + SNIPPET_CHARS < flat.length ? "…" : ""}`;
}

function text(value) {
  return { content: [{ type: "text", text: value }] };
}

function main() {
  const where = path.resolve(process.argv[2] ?? process.env.REINS_SEARCH_CORPUS ?? "corpus");
  const docs = loadCorpus(where);
  const byId = new Map(docs.map((d) => [d.id, d]));
  const index = buildIndex(docs);
  const server = new McpServer({ name: "web-search", version: "1.0.0" });
  server.registerTool(
    "search",
    {
      description: `Search the document collection. Returns up to \`limit\` (default 5, at most ${MAX_HITS}) hits, best first, each with its id (pass it to fetch), title and a snippet.`,
      inputSchema: { query: z.string().min(1).max(1000), limit: z.number().int().min(1).max(MAX_HITS).optional() },
    },
    async ({ query, limit }) => {
      const hits = index.search(query, limit ?? 5).map(({ doc, score }) => ({ id: doc.id, title: doc.title, score: Number(score.toFixed(4)), snippet: snippetOf(doc.text, query) }));
      return { ...text(JSON.stringify(hits, null, 2)), structuredContent: { hits } };
    },
  );
  server.registerTool(
    "fetch",
    { description: `The text of one document by its id (at most ${FETCH_CHARS} characters).`, inputSchema: { id: z.string().min(1).max(1000) } },
    async ({ id }) => {
      const doc = byId.get(id);
      if (!doc) return { ...text(`No document has the id ${JSON.stringify(id)}.`), isError: true };
      const body = doc.text.length > FETCH_CHARS ? `${doc.text.slice(0, FETCH_CHARS)}\n[truncated: ${doc.text.length} characters in all]` : doc.text;
      return text(body);
    },
  );
  return server.connect(new StdioServerTransport());
}

main().catch((e) => {
  process.stderr.write(`web-search: ${e?.message ?? e}\n`);
  process.exit(1);
});
