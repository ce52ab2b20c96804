/**
 * Token-by-token streaming: a streaming request is answered while the engine generates, in each
 * dialect's own event sequence, and what the harness puts together from the deltas is exactly the
 * non-streaming answer; the record is the engine's completion either way.
 */
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import type { ScriptedTurn } from "../../src/compiler/contract/plan.js";
import { type Engine, EngineError, type GenerateChunk, type GenerateRequest, type GenerateResult } from "../../src/runtime/engines/engine.js";
import { createEngine } from "../../src/runtime/engines/registry.js";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import { parseCompletion } from "../../src/runtime/model/output-format.js";
import { type OutputPiece, OutputStream } from "../../src/runtime/model/output-stream.js";
import { flushWindowMs } from "../../src/runtime/proxy/call-stream.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import {
  accumulateAnthropic,
  accumulateChat,
  accumulateResponses,
  httpCall,
  type ParsedEvent,
  parseSse,
  scriptedModel,
  TOOL_TURN,
  WRITE_TOOL_SCHEMA,
} from "./helpers.js";

/** The scripted engine, streamed one token at a time with a pause before each: a deliberately slow engine. */
class SlowEngine implements Engine {
  readonly type = "slow";
  produced = 0;
  total = 0;
  constructor(
    private readonly inner: Engine,
    private readonly msPerToken: number,
  ) {}

  generate(req: GenerateRequest): Promise<GenerateResult> {
    return this.inner.generate(req);
  }

  async generateStream(req: GenerateRequest, onChunk: (c: GenerateChunk) => void): Promise<GenerateResult> {
    let result: GenerateResult;
    let cut: EngineError | undefined;
    try {
      result = await this.inner.generate(req);
    } catch (err) {
      if (!(err instanceof EngineError) || !err.partial) throw err;
      cut = err;
      result = err.partial;
    }
    this.produced = 0;
    this.total = result.ids.length;
    for (let i = 0; i < result.ids.length; i++) {
      await new Promise<void>((resolve) => (this.msPerToken > 0 ? setTimeout(resolve, this.msPerToken) : setImmediate(resolve)));
      this.produced = i + 1;
      onChunk({ ids: [result.ids[i]!], logprobs: [result.logprobs[i]!] });
    }
    if (cut) throw cut;
    return result;
  }
}

async function slowProxy(script: ScriptedTurn[], msPerToken: number) {
  const model = scriptedModel(script);
  const runtime = await loadModelRuntime(model);
  const engine = new SlowEngine(await createEngine(model.engine, { model, runtime }), msPerToken);
  return { proxy: await startProxy({ model, engine }), engine };
}

const TOOLS_CHAT = [{ type: "function", function: { name: "Write", parameters: WRITE_TOOL_SCHEMA } }];
const DIALECTS = {
  "openai-chat": {
    path: "/v1/chat/completions",
    body: { model: "m", tools: TOOLS_CHAT, stream_options: { include_usage: true }, messages: [{ role: "user", content: "go" }] },
  },
  "anthropic-messages": {
    path: "/v1/messages",
    body: {
      model: "claude",
      max_tokens: 1000,
      thinking: { type: "enabled", budget_tokens: 500 },
      tools: [{ name: "Write", input_schema: WRITE_TOOL_SCHEMA }],
      messages: [{ role: "user", content: "go" }],
    },
  },
  "openai-responses": {
    path: "/v1/responses",
    body: { model: "m", reasoning: { effort: "low" }, input: "go", tools: [{ type: "function", name: "Write", parameters: WRITE_TOOL_SCHEMA }] },
  },
} as const;
type DialectName = keyof typeof DIALECTS;

const TURNS: { name: string; turn: ScriptedTurn }[] = [
  { name: "text only", turn: { text: "Hello there.\nThis answer has two lines and a < sign, a <tool tag lookalike and a final newline.\n" } },
  { name: "reasoning + text", turn: { reasoning: "First think.\n\nThen think again.", text: "The answer is 42." } },
  { name: "reasoning + text + tool call", turn: TOOL_TURN },
  {
    name: "two tool calls, no text",
    turn: {
      reasoning: "two files",
      toolCalls: [
        { name: "Write", arguments: { file_path: "a.txt", content: "a <b>\n</tool_call" } },
        { name: "Write", arguments: { file_path: "b.txt", content: "ünïcödé 🌍" } },
      ],
    },
  },
  { name: "unicode text", turn: { text: "héllo 🌍 — 漢字と絵文字 🎉🎉 ok" } },
  {
    name: "text between tool calls",
    turn: {
      raw: 'Before.\n<tool_call>\n{"name": "Write", "arguments": {"file_path": "x", "content": "1"}}\n</tool_call>\nBetween.\n<tool_call>\n{"name": "Write", "arguments": {"file_path": "y", "content": "2"}}\n</tool_call>',
    },
  },
  { name: "invalid tool JSON", turn: { raw: 'Oops.\n<tool_call>\n{"name": "Write", "arguments": {"file_path": "x", "content": "1"}\n</tool_call>' } },
  { name: "unterminated tool call cut by the limit", turn: { raw: 'ok\n<tool_call>\n{"name": "Write", "arguments": {"content": "h', finish: "length" } },
  { name: "reasoning cut by the limit", turn: { raw: "<think>\nstill thinking about", finish: "length" } },
];

type Proxy = Awaited<ReturnType<typeof startProxy>>;
type Registered = ReturnType<Proxy["registerRollout"]>;

async function ask(r: Registered, dialect: DialectName, stream: boolean) {
  const { path, body } = DIALECTS[dialect];
  const headers: Record<string, string> = dialect === "anthropic-messages" ? { "x-api-key": r.apiKey } : { authorization: `Bearer ${r.apiKey}` };
  const reply = await httpCall(`${r.baseUrl}${path}`, { body: { ...body, stream }, headers });
  expect(reply.status).toBe(200);
  return reply.text;
}

/** The answer's content as a harness sees it: reasoning, text, and tool calls (id, name, raw arguments). */
interface Content {
  reasoning: string;
  text: string;
  tools: { id: string; name: string; args: string }[];
}

function contentOfJson(dialect: DialectName, text: string): Content {
  const j = JSON.parse(text);
  if (dialect === "openai-chat") {
    const m = j.choices[0].message;
    return {
      reasoning: m.reasoning_content ?? "",
      text: m.content ?? "",
      tools: (m.tool_calls ?? []).map((t: any) => ({ id: t.id, name: t.function.name, args: t.function.arguments })),
    };
  }
  if (dialect === "anthropic-messages") {
    const blocks: any[] = j.content;
    const join = (type: string, key: string) =>
      blocks
        .filter((b) => b.type === type)
        .map((b) => b[key])
        .join("");
    const tools = blocks.filter((b) => b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, args: b.input.INVALID_JSON ?? JSON.stringify(b.input) }));
    return { reasoning: join("thinking", "thinking"), text: join("text", "text"), tools };
  }
  const items: any[] = j.output;
  return {
    reasoning: items
      .filter((i) => i.type === "reasoning")
      .map((i) => i.summary[0].text)
      .join(""),
    text: items
      .filter((i) => i.type === "message")
      .map((i) => i.content[0].text)
      .join(""),
    tools: items.filter((i) => i.type === "function_call").map((i) => ({ id: i.call_id, name: i.name, args: i.arguments })),
  };
}

function contentOfStream(dialect: DialectName, events: ParsedEvent[]): Content {
  if (dialect === "openai-chat") {
    const a = accumulateChat(events);
    expect(a.done).toBe(true);
    return { reasoning: a.reasoning, text: a.content, tools: a.toolCalls.map((t) => ({ id: t.id, name: t.name, args: t.arguments })) };
  }
  if (dialect === "anthropic-messages") {
    const { message, stopped } = accumulateAnthropic(events);
    expect(stopped).toBe(true);
    const raw = new Map<number, string>();
    for (const e of events) if (e.json?.delta?.type === "input_json_delta") raw.set(e.json.index, (raw.get(e.json.index) ?? "") + e.json.delta.partial_json);
    const blocks: any[] = message.content;
    const join = (type: string, key: string) =>
      blocks
        .filter((b) => b.type === type)
        .map((b) => b[key])
        .join("");
    // a tool_use block carries its input as an object: compare the streamed JSON as the object it makes
    const asInput = (s: string) => {
      try {
        const v = JSON.parse(s);
        return v && typeof v === "object" && !Array.isArray(v) ? JSON.stringify(v) : s;
      } catch {
        return s;
      }
    };
    const tools = blocks.flatMap((b, i) => (b.type === "tool_use" ? [{ id: b.id, name: b.name, args: asInput(raw.get(i) ?? "") }] : []));
    return { reasoning: join("thinking", "thinking"), text: join("text", "text"), tools };
  }
  const { items, final, argsDeltas } = accumulateResponses(events);
  // the items streamed are the response's output (one message item unless text follows a tool call)
  if (items.filter((i) => i.type === "message").length <= 1) expect(items).toEqual(final.output);
  const deltas = (type: string) =>
    events
      .filter((e) => e.event === type)
      .map((e) => e.json.delta)
      .join("");
  expect(final).toBeDefined();
  return {
    reasoning: deltas("response.reasoning_summary_text.delta"),
    text: deltas("response.output_text.delta"),
    tools: items.filter((i) => i.type === "function_call").map((i) => ({ id: i.call_id, name: i.name, args: argsDeltas.get(i.id) ?? "" })),
  };
}

describe("token-by-token streaming", () => {
  it("the reader of the output format releases only what the finished parse confirms, at every split", () => {
    const format = { toolCallFormat: "qwen3" as const, reasoning: { start: "<think>", end: "</think>" } };
    const raws = [
      '<think>\nplan\n</think>\n\nHello <b> world\n<tool_call>\n{"name": "f", "arguments": {"a": "</tool"}}\n</tool_call>\nafter\n<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>',
      "  <think>\n\n</think>\n\n\nText with\n\nblank lines\n",
      "plain text, no reasoning at all <tool_",
      "<think>never closed\n",
      'x\n<tool_call>\n{"name": "f", "arguments": {"a": 1}\n',
      "<think>a</think>b",
    ];
    for (const raw of raws) {
      const parsed = parseCompletion(raw, format);
      for (const size of [1, 2, 3, 7]) {
        const reader = new OutputStream(format);
        const live: OutputPiece[] = [];
        for (let i = 0; i < raw.length; i += size) live.push(...reader.push(raw.slice(i, i + size)));
        const all = [...live, ...reader.finish(parsed)];
        expect(reader.diverged, raw).toBe(false);
        const join = (kind: string) => all.map((p) => (p.kind === kind && p.kind !== "tool" ? p.text : "")).join("");
        expect(join("reasoning"), raw).toBe(parsed.reasoning);
        expect(join("text"), raw).toBe(parsed.text);
        expect(
          all.flatMap((p) => (p.kind === "tool" ? [p.call] : [])),
          raw,
        ).toEqual(parsed.toolCalls);
      }
    }
    // text is released while the completion is still being written, before the marker that follows it
    const reader = new OutputStream(format);
    expect(reader.push("<think>\nhm\n</think>\n\nHello wor")).toEqual([
      { kind: "reasoning", text: "hm" },
      { kind: "text", text: "Hello wor" },
    ]);
    expect(reader.push("ld\n<tool_")).toEqual([{ kind: "text", text: "ld" }]);
  });

  for (const dialect of Object.keys(DIALECTS) as DialectName[]) {
    it(`${dialect}: the streamed deltas add up to the non-streaming answer, and the records are the same`, async () => {
      const script = TURNS.map((t) => t.turn);
      const { proxy } = await slowProxy(script, 0);
      try {
        const [wholeRollout, streamRollout] = [proxy.registerRollout("whole"), proxy.registerRollout("stream")];
        for (const { name } of TURNS) {
          const whole = contentOfJson(dialect, await ask(wholeRollout, dialect, false));
          const streamed = contentOfStream(dialect, parseSse(await ask(streamRollout, dialect, true)));
          // the same call keys make the same tool-call ids: compare without them, then the ids' shape
          expect({ ...streamed, tools: streamed.tools.map((t) => ({ ...t, id: "" })) }, name).toEqual({
            ...whole,
            tools: whole.tools.map((t) => ({ ...t, id: "" })),
          });
          expect(
            streamed.tools.every((t) => t.id.length > 0),
            name,
          ).toBe(true);
        }
        const pick = (r: string) =>
          proxy.records(r).map(({ completionIds, completionLogprobs, parse, finishReason, weightsVersion }) => ({
            completionIds,
            completionLogprobs,
            parse,
            finishReason,
            weightsVersion,
          }));
        expect(pick("stream")).toHaveLength(TURNS.length);
        expect(pick("stream")).toEqual(pick("whole"));
      } finally {
        await proxy.close();
      }
    });
  }

  const FIRST_DELTA: Record<DialectName, (e: ParsedEvent) => boolean> = {
    "openai-chat": (e) => typeof e.json?.choices?.[0]?.delta?.content === "string" && e.json.choices[0].delta.content.length > 0,
    "anthropic-messages": (e) => e.event === "content_block_delta",
    "openai-responses": (e) => e.event === "response.output_text.delta",
  };
  const LONG_TEXT = "Streaming means the harness sees each word as soon as the model writes it, not when the whole answer is done. ".repeat(2);

  for (const dialect of Object.keys(DIALECTS) as DialectName[]) {
    it(`${dialect}: with a slow engine the first delta arrives while most of the completion is still to come`, async () => {
      const { proxy, engine } = await slowProxy([{ text: LONG_TEXT }], 10);
      try {
        const r = proxy.registerRollout("slow");
        const { path, body } = DIALECTS[dialect];
        const headers: Record<string, string> = dialect === "anthropic-messages" ? { "x-api-key": r.apiKey } : { authorization: `Bearer ${r.apiKey}` };
        let producedAtFirstDelta: number | undefined;
        const text = await streamRequest(`${r.baseUrl}${path}`, { ...body, stream: true }, headers, (e) => {
          if (producedAtFirstDelta === undefined && FIRST_DELTA[dialect](e)) producedAtFirstDelta = engine.produced;
        });
        expect(engine.total).toBeGreaterThan(30);
        expect(producedAtFirstDelta).toBeDefined();
        expect(producedAtFirstDelta!).toBeLessThanOrEqual(engine.total / 2);
        expect(contentOfStream(dialect, parseSse(text)).text).toBe(LONG_TEXT);
      } finally {
        await proxy.close();
      }
    });
  }

  it("the write window widens with the answers streaming at once: 8 ms for a few, a quarter second at most", () => {
    expect([1, 4, 5, 16, 17, 64, 128, 129, 10_000].map(flushWindowMs)).toEqual([8, 8, 16, 32, 40, 128, 256, 256, 256]);
  });

  it("each dialect streams in its real event sequence: reasoning, text, then the tool call with its argument deltas", async () => {
    const { proxy } = await slowProxy([TOOL_TURN], 0);
    try {
      const seq = async (dialect: DialectName, label: (e: ParsedEvent) => string) => {
        const events = parseSse(await ask(proxy.registerRollout(`seq-${dialect}`), dialect, true));
        return events.map(label).filter((l, i, all) => i === 0 || l !== all[i - 1]);
      };
      expect(
        await seq("anthropic-messages", (e) =>
          e.event === "content_block_delta" ? e.json.delta.type : e.event === "content_block_start" ? `start:${e.json.content_block.type}` : e.event!,
        ),
      ).toEqual([
        "message_start",
        "ping",
        "start:thinking",
        "thinking_delta",
        "signature_delta",
        "content_block_stop",
        "start:text",
        "text_delta",
        "content_block_stop",
        "start:tool_use",
        "input_json_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
      ]);
      expect(
        await seq("openai-responses", (e) => (e.event === "response.output_item.added" ? `added:${e.json.item.type}` : e.event!.replace(/^response\./, ""))),
      ).toEqual([
        "created",
        "in_progress",
        "added:reasoning",
        "reasoning_summary_part.added",
        "reasoning_summary_text.delta",
        "reasoning_summary_text.done",
        "reasoning_summary_part.done",
        "output_item.done",
        "added:message",
        "content_part.added",
        "output_text.delta",
        "output_text.done",
        "content_part.done",
        "output_item.done",
        "added:function_call",
        "function_call_arguments.delta",
        "function_call_arguments.done",
        "output_item.done",
        "completed",
      ]);
      const chatLabel = (e: ParsedEvent): string => {
        if (e.data === "[DONE]") return "[DONE]";
        const c = e.json.choices[0];
        if (!c) return "usage";
        if (c.finish_reason) return `finish:${c.finish_reason}`;
        const d = c.delta;
        if (d.role) return "role";
        if (d.reasoning_content) return "reasoning_content";
        if (d.content) return "content";
        return d.tool_calls[0].function.name ? "tool_call:name" : "tool_call:arguments";
      };
      expect(await seq("openai-chat", chatLabel)).toEqual([
        "role",
        "reasoning_content",
        "content",
        "tool_call:name",
        "tool_call:arguments",
        "finish:tool_calls",
        "usage",
        "[DONE]",
      ]);
    } finally {
      await proxy.close();
    }
  });

  it("a stream cut by the engine mid tool call breaks the harness's stream; the record keeps the engine's tokens", async () => {
    const { proxy, engine } = await slowProxy([{ ...TOOL_TURN, fault: "cut-stream" }], 0);
    try {
      const r = proxy.registerRollout("cut");
      const { path, body } = DIALECTS["anthropic-messages"];
      const reply = await httpCall(`${r.baseUrl}${path}`, { body: { ...body, stream: true }, headers: { "x-api-key": r.apiKey } });
      expect(reply.cut).toBe(true);
      const events = parseSse(reply.text);
      expect(events.some((e) => e.json?.delta?.type === "input_json_delta")).toBe(true);
      expect(events.some((e) => e.event === "message_stop" || e.event === "message_delta")).toBe(false);
      expect(accumulateAnthropic(events).message.content[1]).toEqual({ type: "text", text: TOOL_TURN.text });
      const [rec] = proxy.records("cut");
      expect(rec).toMatchObject({
        finishReason: "aborted",
        error: { kind: "engine", message: expect.stringMatching(/^stream cut after event \d+ of \d+: .*cut-stream/) },
      });
      expect(rec!.completionIds).toHaveLength(engine.total);
    } finally {
      await proxy.close();
    }
  });
});

/** POST and read the SSE answer as it arrives, calling `onEvent` for each event the moment it is whole. */
function streamRequest(url: string, body: unknown, headers: Record<string, string>, onEvent: (e: ParsedEvent) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    const req = request(
      url,
      { method: "POST", headers: { ...headers, "content-type": "application/json", "content-length": String(payload.length) }, agent: false },
      (res) => {
        let all = "";
        let pending = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          all += chunk;
          pending += chunk;
          const end = pending.lastIndexOf("\n\n");
          if (end < 0) return;
          for (const e of parseSse(pending.slice(0, end + 2))) onEvent(e);
          pending = pending.slice(end + 2);
        });
        res.on("end", () => resolve(all));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}
