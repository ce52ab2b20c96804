/** Test helpers: a scripted Qwen3 model, HTTP calls on loopback, and a client-side SSE parser. */
import { request } from "node:http";
import { gzipSync } from "node:zlib";
import type { ResolvedModel, ScriptedTurn } from "../../src/compiler/contract/plan.js";

export function scriptedModel(script: ScriptedTurn[], overrides: Partial<ResolvedModel> = {}): ResolvedModel {
  return {
    name: "qwen3-test",
    tokenizer: { type: "qwen3" },
    toolCallFormat: "qwen3",
    reasoning: { start: "<think>", end: "</think>" },
    stopTokens: ["<|im_end|>"],
    maxContextTokens: 32768,
    sampling: { temperature: 1, topP: 1, maxTokens: 1024 },
    engine: { type: "scripted", script },
    ...overrides,
  };
}

export interface HttpReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Set when the server closed the connection before the body ended. */
  cut: boolean;
}

export function httpCall(
  url: string,
  opts: { method?: string; body?: unknown; headers?: Record<string, string>; gzip?: boolean; raw?: Buffer } = {},
): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    let payload: Buffer | undefined = opts.raw;
    if (!payload && opts.body !== undefined) payload = Buffer.from(JSON.stringify(opts.body));
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (payload) {
      if (opts.gzip) {
        payload = gzipSync(payload);
        headers["content-encoding"] = "gzip";
      }
      headers["content-type"] ??= "application/json";
      headers["content-length"] = String(payload.length);
    }
    const req = request(url, { method: opts.method ?? (payload ? "POST" : "GET"), headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let cut = false;
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("aborted", () => (cut = true));
      res.on("error", () => (cut = true));
      res.on("close", () => {
        if (!res.complete) cut = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8"), cut });
      });
    });
    req.on("error", reject);
    if (payload) req.write(payload);
    req.end();
  });
}

export interface ParsedEvent {
  event?: string;
  data: string;
  json?: any;
}

/** Parse an SSE body the way client SDKs do: blocks split by blank lines, `data:` lines joined, comments skipped. */
export function parseSse(text: string): ParsedEvent[] {
  const out: ParsedEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    if (block.trim() === "") continue;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const field = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (data.length === 0) continue;
    const joined = data.join("\n");
    const ev: ParsedEvent = { data: joined };
    if (event !== undefined) ev.event = event;
    try {
      ev.json = JSON.parse(joined);
    } catch {
      /* e.g. [DONE] */
    }
    out.push(ev);
  }
  return out;
}

/** Rebuild a chat completion from its stream chunks, as the OpenAI SDK's stream helpers do. */
export function accumulateChat(events: ParsedEvent[]): {
  content: string;
  reasoning: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finish: string | null;
  usage?: any;
  done: boolean;
} {
  let content = "";
  let reasoning = "";
  const toolCalls: { id: string; name: string; arguments: string }[] = [];
  let finish: string | null = null;
  let usage: any;
  let done = false;
  for (const e of events) {
    if (e.data === "[DONE]") {
      done = true;
      continue;
    }
    const j = e.json;
    if (j.usage) usage = j.usage;
    const choice = j.choices?.[0];
    if (!choice) continue;
    const d = choice.delta ?? {};
    if (typeof d.content === "string") content += d.content;
    if (typeof d.reasoning_content === "string") reasoning += d.reasoning_content;
    for (const tc of d.tool_calls ?? []) {
      const slot = (toolCalls[tc.index] ??= { id: "", name: "", arguments: "" });
      if (tc.id) slot.id = tc.id;
      if (tc.function?.name) slot.name = tc.function.name;
      if (tc.function?.arguments) slot.arguments += tc.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { content, reasoning, toolCalls, finish, usage, done };
}

/** Rebuild an Anthropic message from its stream, as the Anthropic SDK's MessageStream does. */
export function accumulateAnthropic(events: ParsedEvent[]): { message: any; stopped: boolean } {
  let message: any;
  let stopped = false;
  const partial = new Map<number, string>();
  for (const e of events) {
    const j = e.json;
    if (!j) continue;
    if (e.event !== j.type) throw new Error(`event name ${e.event} does not match data.type ${j.type}`);
    switch (j.type) {
      case "message_start":
        message = structuredClone(j.message);
        break;
      case "content_block_start":
        message.content[j.index] = structuredClone(j.content_block);
        break;
      case "content_block_delta": {
        const block = message.content[j.index];
        const d = j.delta;
        if (d.type === "text_delta") block.text += d.text;
        else if (d.type === "thinking_delta") block.thinking += d.thinking;
        else if (d.type === "signature_delta") block.signature = d.signature;
        else if (d.type === "input_json_delta") partial.set(j.index, (partial.get(j.index) ?? "") + d.partial_json);
        break;
      }
      case "content_block_stop": {
        const block = message.content[j.index];
        if (block.type === "tool_use") {
          const raw = partial.get(j.index) ?? "";
          try {
            block.input = raw ? JSON.parse(raw) : {};
          } catch {
            block.input = { __unparsedToolInput: { raw, len: raw.length } };
          }
        }
        break;
      }
      case "message_delta":
        message.stop_reason = j.delta.stop_reason;
        message.usage = { ...message.usage, ...j.usage };
        break;
      case "message_stop":
        stopped = true;
        break;
    }
  }
  return { message, stopped };
}

/** Rebuild a Responses API response from its stream: items from output_item.done, final from response.completed/incomplete. */
export function accumulateResponses(events: ParsedEvent[]): { items: any[]; final: any; argsDeltas: Map<string, string> } {
  const items: any[] = [];
  let final: any;
  const argsDeltas = new Map<string, string>();
  let seqExpected = 0;
  for (const e of events) {
    const j = e.json;
    if (!j) continue;
    if (e.event !== j.type) throw new Error(`event name ${e.event} does not match data.type ${j.type}`);
    if (j.sequence_number !== seqExpected++) throw new Error(`sequence_number ${j.sequence_number} out of order`);
    if (j.type === "response.output_item.done") items[j.output_index] = j.item;
    if (j.type === "response.function_call_arguments.delta") argsDeltas.set(j.item_id, (argsDeltas.get(j.item_id) ?? "") + j.delta);
    if (j.type === "response.completed" || j.type === "response.incomplete") final = j.response;
  }
  return { items, final, argsDeltas };
}

export const WRITE_TOOL_SCHEMA = {
  type: "object",
  properties: { file_path: { type: "string" }, content: { type: "string" } },
  required: ["file_path", "content"],
};

/** Tool-use turn like the capture lab's: text with trailing whitespace, reasoning, non-canonical key order. */
export const TOOL_TURN = {
  reasoning: 'The user wants hello.txt with "hi".  I should use the tool.',
  text: "I'll create the file now.  \n",
  toolCalls: [{ name: "Write", arguments: { content: "hi", file_path: "/w/hello.txt" } }],
};

/** Does `hay` start with `prefix`? */
export function startsWithIds(hay: readonly number[], prefix: readonly number[]): boolean {
  if (prefix.length > hay.length) return false;
  for (let i = 0; i < prefix.length; i++) if (hay[i] !== prefix[i]) return false;
  return true;
}

/** Index of `needle` as a contiguous run inside `hay`, or -1. */
export function indexOfIds(hay: readonly number[], needle: readonly number[]): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
