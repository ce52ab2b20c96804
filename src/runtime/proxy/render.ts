/**
 * Prompt rendering with token-in-token-out (TITO).
 *
 * DECISION — prompts are prefix-consistent, not template-faithful.
 * A harness sends the whole conversation on every call, re-serialized its own way (Claude Code
 * re-orders tool arguments and moves cache_control, OpenClaw renames tool-call ids, Qwen Code trims
 * reasoning, many drop thinking). Re-rendering that text with the chat template would give tokens
 * the model never produced, and the Qwen3 template itself rewrites history: it drops the reasoning
 * of assistant turns that precede the last user message and re-serializes tool-call arguments with
 * `tojson`. So the proxy renders the prompt of a call as
 *
 *     prompt(n+1) = [stored segments of the longest known prefix]
 *                 + [for each assistant turn the proxy produced: generation prompt + its raw
 *                    completion ids + the closing text (`\n` after <|im_end|>)]
 *                 + [template rendering of the messages that are new]
 *                 + generation prompt
 *
 * For a harness that appends to its conversation (Claude Code, Codex, reins-agent, pi), call n+1's
 * prompt therefore starts with call n's prompt followed by call n's completion ids, token for
 * token: the calls of a rollout merge into one prefix tree, every generated token is trained once,
 * with the logprob it was sampled with, and the model is trained on exactly the context it saw.
 * The price is that past assistant turns keep their reasoning and exact formatting, unlike
 * `apply_chat_template` on the same messages; training and serving both use this form.
 *
 * Assistant turns the proxy did not produce (injected by the harness, or whose completion is not
 * recognised) are context: they are rendered the way the template renders a past turn (content +
 * tool calls, no reasoning).
 *
 * Matching an echoed assistant turn to a stored completion (see normalize.ts): trimmed text +
 * tool calls by name and parsed arguments, reasoning ignored; tool-call ids (compared without
 * punctuation) pick among equal candidates, then the latest candidate produced at the same prompt
 * position (after a retry the harness continues from the answer it received last), then the latest.
 *
 * INCREMENTAL — segments are cut at message-group boundaries (each starts with a special token,
 * so tokenizing them apart equals tokenizing them together) and kept per rollout in a trie keyed by
 * the group's content. Only groups past the longest known path are rendered and tokenized, unless
 * another rollout already tokenized the same segment (the shared SegmentCache: headers, first user
 * messages); `tokenizedPromptTokens` counts the tokens the tokenizer actually produced.
 */
import type { ModelRuntime } from "../model/model-runtime.js";
import type { ParsedCompletion } from "../model/output-format.js";
import type { TemplateMessage, TemplateTool } from "../model/chat-template.js";
import type { CanonicalMessage, CanonicalRequest } from "./canonical.js";
import { keyOfEcho, keyOfParsed, normalizeToolId } from "./normalize.js";
import { KeyMemo } from "./key-memo.js";
import { childOf, createRoot, idsOfPath, type SegmentNode } from "./prompt-trie.js";
import type { SegmentCache } from "./segment-cache.js";

interface StoredCompletion {
  seq: number;
  key: string;
  /** Segment ids: generation prompt + completion + closing. */
  ids: number[];
  /** Where the completion was produced (end of its prompt, before the generation prompt). */
  parent: SegmentNode;
}

/** What the proxy remembers about one rollout's prompts and completions. */
export class RolloutPromptState {
  readonly root = createRoot();
  /** `cache`: segment ids shared with other rollouts of the same model (optional). */
  constructor(readonly cache?: SegmentCache) {}

  private readonly byKey = new Map<string, StoredCompletion[]>();
  private readonly byToolId = new Map<string, StoredCompletion>();
  /** Keys of the last request's segments (header at 0, then its message groups), and of its echoed assistant turns. */
  readonly segmentKeys = new KeyMemo();
  private readonly echoKeys = new KeyMemo();

  /** Remember a completion so later prompts that carry it back reuse its raw ids. */
  addCompletion(
    rt: ModelRuntime,
    seq: number,
    parent: SegmentNode,
    completionIds: readonly number[],
    parsed: ParsedCompletion,
    toolCallIds: readonly string[],
  ): void {
    const last = completionIds[completionIds.length - 1];
    const closing = last !== undefined && last === rt.closingStopId ? rt.closingAfterStopIds : rt.closingWithoutStopIds;
    const stored: StoredCompletion = {
      seq,
      key: keyOfParsed(parsed),
      ids: [...rt.generationPromptIds, ...completionIds, ...closing],
      parent,
    };
    const list = this.byKey.get(stored.key) ?? [];
    list.push(stored);
    this.byKey.set(stored.key, list);
    for (const id of toolCallIds) this.byToolId.set(normalizeToolId(id), stored);
  }

  /** The stored completion an echoed assistant message stands for, if any (`at`: where it is echoed, when that node exists). */
  find(msg: Extract<CanonicalMessage, { role: "assistant" }>, at: SegmentNode | undefined, position: number): StoredCompletion | undefined {
    const key = this.echoKeys.keyOf(position, msg, echoKeyOf);
    for (const tc of msg.toolCalls) {
      const hit = this.byToolId.get(normalizeToolId(tc.id));
      if (hit && hit.key === key) return hit;
    }
    const list = this.byKey.get(key);
    if (!list || list.length === 0) return undefined;
    // Latest first: after a retry, the harness continues from the answer it received last.
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.parent === at) return list[i];
    return list[list.length - 1];
  }
}

export interface RenderedPrompt {
  ids: number[];
  /** seq numbers of stored completions spliced into this prompt, in order. */
  reused: number[];
  /** Prompt tokens produced by the tokenizer for this call. */
  tokenizedPromptTokens: number;
  /** End of the prompt path (before the generation prompt); the completion hangs below it. */
  end: SegmentNode;
}

type Group = { kind: "template"; messages: CanonicalMessage[] } | { kind: "assistant"; message: Extract<CanonicalMessage, { role: "assistant" }> };

/** One segment of a prompt past the known path: stored ids (a spliced turn, a cached segment) or text still to tokenize. */
type PendingSegment = { key: string; ids: readonly number[]; seq?: number } | { key: string; text: string };

/**
 * A prompt walked as far as the rollout's trie knows it (no tokenizing yet): the deepest known
 * node and the segments below it, of which `texts` still need the tokenizer.
 */
export interface PromptPlan {
  known: SegmentNode;
  pending: PendingSegment[];
  reused: number[];
  /** Tokens of the prompt already known (path + stored + cached segments + generation prompt). */
  knownTokens: number;
  /** Characters the tokenizer would have to read. */
  newChars: number;
  /** The key of every segment, in order: with nothing spliced, together they name the request's template input. */
  keys: string[];
}

/** Walk a request's prompt: follow the trie, splice stored completions, render (not tokenize) the rest. */
export function planPrompt(state: RolloutPromptState, rt: ModelRuntime, req: CanonicalRequest): PromptPlan {
  const reused: number[] = [];
  const pending: PendingSegment[] = [];
  let known = state.root;
  let knownTokens = rt.generationPromptIds.length;
  let newChars = 0;
  const keys: string[] = [];
  const step = (key: string, make: () => PendingSegment): void => {
    keys.push(key);
    const existing = pending.length === 0 ? known.children.get(key) : undefined;
    if (existing) {
      known = existing;
      return;
    }
    const seg = make();
    if ("text" in seg) newChars += seg.text.length;
    else knownTokens += seg.ids.length;
    pending.push(seg);
  };
  const templated = (key: string, text: () => string) => (): PendingSegment => {
    const cached = state.cache?.get(key);
    return cached ? { key, ids: cached } : { key, text: text() };
  };
  const shared = state.cache?.keys;
  const headerKey = state.segmentKeys.keyOf(0, { system: req.system, tools: req.tools }, headerKeyOf, shared);
  step(
    headerKey,
    templated(headerKey, () => rt.template.header(req.system, templateTools(req))),
  );
  const groups = groupMessages(req.messages);
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g]!;
    if (group.kind === "assistant") {
      // Off the known path the node is new, so no stored completion hangs below it: find() falls back to the latest.
      const stored = state.find(group.message, pending.length === 0 ? known : undefined, g);
      if (stored) {
        reused.push(stored.seq);
        step(`a:${stored.seq}`, () => ({ key: `a:${stored.seq}`, ids: stored.ids, seq: stored.seq }));
        continue;
      }
    }
    const messages = group.kind === "assistant" ? [group.message] : group.messages;
    const key = state.segmentKeys.keyOf(g + 1, messages, groupKeyOf, shared);
    step(
      key,
      templated(key, () => rt.template.group(messages.map(toTemplateMessage))),
    );
  }
  return { known, pending, reused, knownTokens: knownTokens + known.depth, newChars, keys };
}

/** The texts of a plan the tokenizer must read, in order. */
export function textsOf(plan: PromptPlan): string[] {
  return plan.pending.flatMap((seg) => ("text" in seg ? [seg.text] : []));
}

/** Hang a plan's segments below its known node, with `encoded[i]` the ids of `textsOf(plan)[i]`. */
export function commitPrompt(state: RolloutPromptState, rt: ModelRuntime, plan: PromptPlan, encoded: readonly (readonly number[])[]): RenderedPrompt {
  let node = plan.known;
  let next = 0;
  let tokenized = 0;
  for (const seg of plan.pending) {
    let made: { ids: readonly number[]; seq?: number };
    if ("text" in seg) {
      const ids = encoded[next++]!;
      tokenized += ids.length;
      state.cache?.set(seg.key, ids);
      made = { ids };
    } else made = seg.seq !== undefined ? { ids: seg.ids, seq: seg.seq } : { ids: seg.ids };
    // A concurrent call of the rollout may have added the same segment meanwhile: childOf keeps the first.
    node = childOf(node, seg.key, () => made).node;
  }
  return { ids: idsOfPath(node, rt.generationPromptIds), reused: plan.reused, tokenizedPromptTokens: tokenized, end: node };
}

/** Render a request's prompt ids, reusing what the rollout already tokenized (tokenizing inline). */
export function renderPrompt(state: RolloutPromptState, rt: ModelRuntime, req: CanonicalRequest): RenderedPrompt {
  const plan = planPrompt(state, rt, req);
  return commitPrompt(
    state,
    rt,
    plan,
    textsOf(plan).map((t) => rt.tokenizer.encode(t)),
  );
}

/** Prompt ids of a request rendered from scratch (no stored completions); for counting and benches. */
export function renderPromptFresh(rt: ModelRuntime, req: CanonicalRequest): number[] {
  return renderPrompt(new RolloutPromptState(), rt, req).ids;
}

function headerKeyOf(header: { system: string | undefined; tools: CanonicalRequest["tools"] }): string {
  return `h:${JSON.stringify([header.system ?? null, templateTools(header)])}`;
}

function groupKeyOf(messages: CanonicalMessage[]): string {
  return `g:${JSON.stringify(messages.map(toTemplateMessage))}`;
}

function echoKeyOf(msg: Extract<CanonicalMessage, { role: "assistant" }>): string {
  return keyOfEcho(msg.content, msg.toolCalls);
}

/** Consecutive tool results form one group (the template wraps them in one turn); others stand alone. */
function groupMessages(messages: CanonicalMessage[]): Group[] {
  const groups: Group[] = [];
  for (const m of messages) {
    const last = groups[groups.length - 1];
    if (m.role === "assistant") groups.push({ kind: "assistant", message: m });
    else if (m.role === "tool" && last?.kind === "template" && last.messages[0]?.role === "tool") last.messages.push(m);
    else groups.push({ kind: "template", messages: [m] });
  }
  return groups;
}

function toTemplateMessage(m: CanonicalMessage): TemplateMessage {
  switch (m.role) {
    case "system":
    case "user":
      return { role: m.role, content: m.content };
    case "tool":
      return { role: "tool", content: m.content };
    case "assistant": {
      const out: TemplateMessage = { role: "assistant", content: m.content };
      if (m.toolCalls.length > 0) {
        out.tool_calls = m.toolCalls.map((tc) => ({ type: "function", function: { name: tc.name, arguments: argumentsValue(tc.arguments) } }));
      }
      return out;
    }
  }
}

function argumentsValue(text: string): unknown {
  try {
    const v = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : text;
  } catch {
    return text;
  }
}

function templateTools(req: Pick<CanonicalRequest, "tools">): TemplateTool[] {
  return req.tools.map((t) => ({
    type: "function",
    function: t.description !== undefined ? { name: t.name, description: t.description, parameters: t.parameters } : { name: t.name, parameters: t.parameters },
  }));
}

/**
 * The whole request rendered by the chat template at once (system prompt, tools, every message,
 * generation prompt), with the same messages the segments are made of: what
 * `apply_chat_template` gives for the conversation the proxy saw. Compared with a first call's
 * prompt ids by ./template-check.ts.
 */
export function renderWithTemplate(rt: ModelRuntime, req: CanonicalRequest): string {
  const messages: TemplateMessage[] = req.system !== undefined ? [{ role: "system", content: req.system }] : [];
  for (const m of req.messages) messages.push(toTemplateMessage(m));
  return rt.template.render(messages, templateTools(req), true);
}

/** What the template's rendering of a whole request depends on (equal keys, equal renderings). */
export function templateKey(req: CanonicalRequest): string {
  return JSON.stringify([req.system ?? null, templateTools(req), req.messages.map(toTemplateMessage)]);
}
