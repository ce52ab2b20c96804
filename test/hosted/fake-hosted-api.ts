/**
 * Local fakes of the two hosted APIs reins speaks, on a loopback port: Anthropic's Messages API
 * (`POST /v1/messages`, JSON or SSE) and OpenAI's Chat Completions (`POST /v1/chat/completions`).
 * What each answers is the test's `answer(api, body)`; every request is kept with its headers.
 * The streams follow the APIs' event shapes (message_start … message_stop; chat.completion.chunk … [DONE]).
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export type FakeApi = "anthropic-messages" | "openai-chat";
export type FakeAnswer = { text: string } | { tool: { name: string; input: Record<string, unknown> } };

export interface FakeHostedApi {
  base: string;
  seen: { api: FakeApi; url: string; headers: IncomingHttpHeaders; body: any }[];
  close(): Promise<void>;
}

export async function startFakeHostedApi(answer: (api: FakeApi, body: any) => FakeAnswer): Promise<FakeHostedApi> {
  const seen: FakeHostedApi["seen"] = [];
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      const api: FakeApi | undefined = req.url === "/v1/messages" ? "anthropic-messages" : req.url === "/v1/chat/completions" ? "openai-chat" : undefined;
      if (!api) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
        return;
      }
      const body = JSON.parse(raw);
      seen.push({ api, url: req.url!, headers: req.headers, body });
      const a = answer(api, body);
      if (body.stream === true) {
        res.writeHead(200, { "content-type": "text/event-stream", "request-id": `req-${seen.length}` });
        for (const e of api === "anthropic-messages" ? anthropicEvents(a, body.model) : openaiChunks(a, body.model)) res.write(e);
        res.end();
      } else {
        res.writeHead(200, { "content-type": "application/json", "request-id": `req-${seen.length}` });
        res.end(JSON.stringify(api === "anthropic-messages" ? anthropicMessage(a, body.model) : openaiCompletion(a, body.model)));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

const USAGE = { input_tokens: 57, output_tokens: 9 };

function anthropicMessage(a: FakeAnswer, model: string): unknown {
  const content = "text" in a ? [{ type: "text", text: a.text }] : [{ type: "tool_use", id: "toolu_1", name: a.tool.name, input: a.tool.input }];
  return {
    id: "msg_1",
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: "text" in a ? "end_turn" : "tool_use",
    stop_sequence: null,
    usage: USAGE,
  };
}

function anthropicEvents(a: FakeAnswer, model: string): string[] {
  const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const block = "text" in a ? { type: "text", text: "" } : { type: "tool_use", id: "toolu_1", name: a.tool.name, input: {} };
  const delta = "text" in a ? { type: "text_delta", text: a.text } : { type: "input_json_delta", partial_json: JSON.stringify(a.tool.input) };
  return [
    ev("message_start", {
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        usage: { input_tokens: USAGE.input_tokens, output_tokens: 1 },
      },
    }),
    ev("content_block_start", { index: 0, content_block: block }),
    ev("content_block_delta", { index: 0, delta }),
    ev("content_block_stop", { index: 0 }),
    ev("message_delta", { delta: { stop_reason: "text" in a ? "end_turn" : "tool_use", stop_sequence: null }, usage: { output_tokens: USAGE.output_tokens } }),
    ev("message_stop", {}),
  ];
}

function openaiMessage(a: FakeAnswer): Record<string, unknown> {
  return "text" in a
    ? { role: "assistant", content: a.text }
    : {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: a.tool.name, arguments: JSON.stringify(a.tool.input) } }],
      };
}

function openaiCompletion(a: FakeAnswer, model: string): unknown {
  return {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 0,
    model,
    choices: [{ index: 0, message: openaiMessage(a), finish_reason: "text" in a ? "stop" : "tool_calls" }],
    usage: { prompt_tokens: USAGE.input_tokens, completion_tokens: USAGE.output_tokens, total_tokens: USAGE.input_tokens + USAGE.output_tokens },
  };
}

function openaiChunks(a: FakeAnswer, model: string): string[] {
  const chunk = (choice: object, extra: object = {}) =>
    `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 0, model, choices: [choice], ...extra })}\n\n`;
  const delta =
    "text" in a
      ? { role: "assistant", content: a.text }
      : {
          role: "assistant",
          tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: a.tool.name, arguments: JSON.stringify(a.tool.input) } }],
        };
  return [
    chunk({ index: 0, delta, finish_reason: null }),
    chunk(
      { index: 0, delta: {}, finish_reason: "text" in a ? "stop" : "tool_calls" },
      { usage: { prompt_tokens: USAGE.input_tokens, completion_tokens: USAGE.output_tokens, total_tokens: USAGE.input_tokens + USAGE.output_tokens } },
    ),
    "data: [DONE]\n\n",
  ];
}
