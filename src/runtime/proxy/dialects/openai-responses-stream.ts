/**
 * OpenAI Responses, streamed while the engine generates: response.created and
 * response.in_progress, then one output item per released piece run — reasoning (summary text
 * deltas, only when the request asks for reasoning), message (output_text deltas), function_call
 * (function_call_arguments deltas) or custom_tool_call (input deltas) — each closed with its
 * `.done` events when the next item starts or the response ends, then response.completed (or
 * response.incomplete) with the whole response, exactly as the non-streaming answer.
 */
import type { OutputPiece } from "../../model/output-stream.js";
import type { CanonicalCompletion, SseEvent } from "../canonical.js";
import { chunkArguments, chunkText, makeId, makeReasoningToken, nowSeconds } from "../ids.js";
import type { DialectStream, StreamHead } from "./dialect.js";
import { finalStatus, outputItems, responseObject, toolCallItem, toolRoutes, wantsEncrypted, wantsReasoning } from "./openai-responses-items.js";

interface OpenItem {
  kind: "reasoning" | "message" | "tool";
  id: string;
  index: number;
  text: string;
  /** A tool call's finished item (its `.done` events wait for the next item or the end). */
  item?: Record<string, unknown>;
}

export function openResponsesStream(head: StreamHead, body: Record<string, unknown>): DialectStream {
  const createdAt = nowSeconds();
  const showReasoning = wantsReasoning(body) || wantsEncrypted(body);
  const routes = toolRoutes(body);
  let seq = 0;
  let items = 0;
  let tools = 0;
  let messages = 0;
  let current: OpenItem | undefined;
  const ev = (events: SseEvent[], type: string, data: Record<string, unknown>): SseEvent => {
    const e: SseEvent = { event: type, data: { type, sequence_number: seq++, ...data } };
    events.push(e);
    return e;
  };
  const inProgress = () => responseObject({ ...head, completionTokens: 0 }, body, "in_progress", [], createdAt);

  const close = (events: SseEvent[], messageStatus: string) => {
    const it = current;
    current = undefined;
    if (!it) return;
    const at = { item_id: it.id, output_index: it.index };
    let item: Record<string, unknown>;
    if (it.kind === "reasoning") {
      const part = { type: "summary_text", text: it.text };
      ev(events, "response.reasoning_summary_text.done", { ...at, summary_index: 0, text: it.text });
      ev(events, "response.reasoning_summary_part.done", { ...at, summary_index: 0, part });
      item = { id: it.id, type: "reasoning", summary: [part] };
      if (wantsEncrypted(body)) item.encrypted_content = makeReasoningToken(head.callKey);
    } else if (it.kind === "message") {
      const part = { type: "output_text", text: it.text, annotations: [], logprobs: [] };
      ev(events, "response.output_text.done", { ...at, content_index: 0, text: it.text, logprobs: [] });
      ev(events, "response.content_part.done", { ...at, content_index: 0, part });
      item = { id: it.id, type: "message", status: messageStatus, role: "assistant", content: [part] };
    } else {
      item = it.item!;
      if (item.type === "custom_tool_call") ev(events, "response.custom_tool_call_input.done", { ...at, input: item.input });
      else ev(events, "response.function_call_arguments.done", { ...at, arguments: item.arguments });
    }
    ev(events, "response.output_item.done", { output_index: it.index, item });
  };

  const openText = (events: SseEvent[], kind: "reasoning" | "message") => {
    close(events, "completed");
    const index = items++;
    // a second message item (text after tool calls) needs an id of its own
    const id =
      kind === "reasoning" ? makeId("rs_", `${head.callKey}:reasoning`) : makeId("msg_", `${head.callKey}:message${messages++ > 0 ? `:${index}` : ""}`);
    current = { kind, id, index, text: "" };
    if (kind === "reasoning") {
      ev(events, "response.output_item.added", { output_index: index, item: { id, type: "reasoning", summary: [] } });
      ev(events, "response.reasoning_summary_part.added", { item_id: id, output_index: index, summary_index: 0, part: { type: "summary_text", text: "" } });
    } else {
      ev(events, "response.output_item.added", { output_index: index, item: { id, type: "message", status: "in_progress", role: "assistant", content: [] } });
      ev(events, "response.content_part.added", {
        item_id: id,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [], logprobs: [] },
      });
    }
  };

  const pushTool = (events: SseEvent[], call: Extract<OutputPiece, { kind: "tool" }>["call"]) => {
    close(events, "completed");
    const index = items++;
    const i = tools++;
    const route = routes.get(call.name);
    const isCustom = route?.custom === true;
    const id = makeId(isCustom ? "ctc_" : "fc_", `${head.callKey}:fc:${i}`);
    const item = toolCallItem(id, head.toolCallId(i), call, route);
    const text = (isCustom ? item.input : item.arguments) as string;
    current = { kind: "tool", id, index, text, item };
    ev(events, "response.output_item.added", { output_index: index, item: { ...item, status: "in_progress", [isCustom ? "input" : "arguments"]: "" } });
    const delta = isCustom ? "response.custom_tool_call_input.delta" : "response.function_call_arguments.delta";
    chunkArguments(text).forEach((piece, j) => {
      const e = ev(events, delta, { item_id: id, output_index: index, delta: piece });
      if (j === 0) e.midToolCall = true;
    });
  };

  return {
    open() {
      const events: SseEvent[] = [];
      ev(events, "response.created", { response: inProgress() });
      ev(events, "response.in_progress", { response: inProgress() });
      return events;
    },
    push(piece: OutputPiece): SseEvent[] {
      const events: SseEvent[] = [];
      if (piece.kind === "tool") {
        pushTool(events, piece.call);
        return events;
      }
      if (piece.kind === "reasoning" && !showReasoning) return events;
      const kind = piece.kind === "reasoning" ? "reasoning" : "message";
      if (current?.kind !== kind) openText(events, kind);
      const it = current!;
      it.text += piece.text;
      for (const p of chunkText(piece.text)) {
        if (kind === "reasoning") ev(events, "response.reasoning_summary_text.delta", { item_id: it.id, output_index: it.index, summary_index: 0, delta: p });
        else ev(events, "response.output_text.delta", { item_id: it.id, output_index: it.index, content_index: 0, delta: p, logprobs: [] });
      }
      return events;
    },
    end(c: CanonicalCompletion): SseEvent[] {
      const events: SseEvent[] = [];
      close(events, c.finish === "length" && c.parsed.toolCalls.length === 0 ? "incomplete" : "completed");
      const status = finalStatus(c);
      ev(events, status === "incomplete" ? "response.incomplete" : "response.completed", {
        response: responseObject(c, body, status, outputItems(c, body), createdAt),
      });
      return events;
    },
  };
}
