/**
 * Prompt rendering cost per call: incremental (the proxy's renderer: stored segments + new
 * messages only) vs full re-tokenization (chat template over the whole conversation, then the
 * tokenizer over all of it), on one 40-turn tool-use conversation growing to ~100K tokens.
 *
 *   node --import tsx bench/proxy-render.ts
 */
import { performance } from "node:perf_hooks";
import type { ResolvedModel } from "../src/compiler/contract/plan.js";
import type { TemplateMessage, TemplateTool } from "../src/runtime/model/chat-template.js";
import { loadModelRuntime } from "../src/runtime/model/model-runtime.js";
import { renderTurn } from "../src/runtime/model/output-format.js";
import type { CanonicalMessage, CanonicalRequest } from "../src/runtime/proxy/canonical.js";
import { renderPrompt, RolloutPromptState } from "../src/runtime/proxy/render.js";

const TURNS = 40;
const RESULT_CHARS = 10_000; // ~2.4K tokens of tool output per turn

const model: ResolvedModel = {
  name: "qwen3",
  tokenizer: { type: "qwen3" },
  toolCallFormat: "qwen3",
  reasoning: { start: "<think>", end: "</think>" },
  stopTokens: ["<|im_end|>"],
  maxContextTokens: 200_000,
  sampling: { temperature: 1, topP: 1, maxTokens: 4096 },
  engine: { type: "scripted", script: [] },
};

/** Seeded text that looks like source files and logs (not one repeated phrase: BPE caches those). */
function makeText(seed: number, chars: number): string {
  let s = seed >>> 0 || 1;
  const rnd = () => ((s = Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32;
  const words = [
    "const",
    "value",
    "return",
    "function",
    "items",
    "map",
    "filter",
    "error",
    "await",
    "config",
    "path",
    "result",
    "index",
    "length",
    "string",
    "number",
    "export",
    "import",
    "from",
    "the",
    "file",
    "line",
    "tokens",
    "user",
    "request",
    "proxy",
    "model",
    "async",
    "if",
    "else",
  ];
  let out = "";
  while (out.length < chars) {
    const n = 3 + Math.floor(rnd() * 9);
    const line: string[] = [];
    for (let i = 0; i < n; i++) {
      const w = words[Math.floor(rnd() * words.length)]!;
      line.push(rnd() < 0.15 ? `${w}${Math.floor(rnd() * 1000)}` : rnd() < 0.1 ? `${w}(${Math.floor(rnd() * 50)})` : w);
    }
    out += `${"  ".repeat(Math.floor(rnd() * 3))}${line.join(" ")};\n`;
  }
  return out.slice(0, chars);
}

const rt = await loadModelRuntime(model);
const tools = [
  {
    name: "read",
    description: "Read a file from the workspace.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
  { name: "bash", description: "Run a shell command.", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } },
];
const templateTools: TemplateTool[] = tools.map((t) => ({ type: "function", function: t }));
const system = `You are a coding agent working in /w.\n${makeText(1, 8000)}`;
const messages: CanonicalMessage[] = [{ role: "user", content: "Read every part of the project and summarize it." }];
const rawAssistant: string[] = [];
const state = new RolloutPromptState();

interface Row {
  tokens: number;
  incMs: number;
  fullMs: number;
  tokenized: number;
}
const rows: Row[] = [];

for (let turn = 0; turn < TURNS; turn++) {
  const req: CanonicalRequest = { dialect: "openai-chat", model: "qwen3", stream: false, system, messages: [...messages], tools };

  const t0 = performance.now();
  const rendered = renderPrompt(state, rt, req);
  const incMs = performance.now() - t0;

  // Full re-tokenization: the template over everything (past turns carried as the model wrote them), then encode.
  const t1 = performance.now();
  const tm: TemplateMessage[] = [{ role: "system", content: system }];
  let a = 0;
  for (const m of messages) {
    if (m.role === "assistant") tm.push({ role: "assistant", content: rawAssistant[a++]! });
    else if (m.role === "tool") tm.push({ role: "tool", content: m.content });
    else tm.push({ role: m.role, content: m.content });
  }
  const fullIds = rt.tokenizer.encode(rt.template.render(tm, templateTools, true));
  const fullMs = performance.now() - t1;
  if (turn === 0 && fullIds.length !== rendered.ids.length) throw new Error("first prompt differs between the two renderers");

  rows.push({ tokens: rendered.ids.length, incMs, fullMs, tokenized: rendered.tokenizedPromptTokens });

  // The model's answer: reasoning + a tool call; then the harness appends it and the tool result.
  const turnSpec = {
    reasoning: `Part ${turn} next.`,
    text: `Reading part ${turn}.`,
    toolCalls: [{ name: "read", arguments: { path: `/w/src/part-${turn}.ts` } }],
  };
  const raw = renderTurn(turnSpec, rt.format);
  const completion = [...rt.tokenizer.encode(raw), rt.stopIds[0]!];
  const { parsed } = rt.parse(completion);
  const id = `call_${turn}`;
  state.addCompletion(rt, turn, rendered.end, completion, parsed, [id]);
  rawAssistant.push(raw);
  messages.push({ role: "assistant", content: turnSpec.text, toolCalls: [{ id, name: "read", arguments: JSON.stringify(turnSpec.toolCalls[0]!.arguments) }] });
  messages.push({ role: "tool", toolCallId: id, content: makeText(100 + turn, RESULT_CHARS) });
}

const buckets = [
  [0, 25_000],
  [25_000, 50_000],
  [50_000, 75_000],
  [75_000, Infinity],
] as const;
const fmt = (n: number, w: number) => n.toFixed(1).padStart(w);
console.log(`proxy-render: ${TURNS} calls, prompt grows to ${rows.at(-1)!.tokens} tokens (Qwen3 tokenizer)`);
console.log("bucket (tokens)   calls  incremental ms  full ms  full/incremental  new tokens/call");
for (const [lo, hi] of buckets) {
  const sel = rows.filter((r) => r.tokens >= lo && r.tokens < hi);
  if (sel.length === 0) continue;
  const mean = (f: (r: Row) => number) => sel.reduce((s, r) => s + f(r), 0) / sel.length;
  const label = `${lo / 1000}K-${hi === Infinity ? "" : `${hi / 1000}K`}`.padEnd(16);
  console.log(
    `${label}  ${String(sel.length).padStart(5)}  ${fmt(
      mean((r) => r.incMs),
      14,
    )}  ${fmt(
      mean((r) => r.fullMs),
      7,
    )}  ${fmt(mean((r) => r.fullMs) / mean((r) => r.incMs), 16)}x  ${fmt(
      mean((r) => r.tokenized),
      15,
    )}`,
  );
}
const total = (f: (r: Row) => number) => rows.reduce((s, r) => s + f(r), 0);
console.log(
  `all calls: incremental ${total((r) => r.incMs).toFixed(0)} ms, full ${total((r) => r.fullMs).toFixed(0)} ms, ratio ${(total((r) => r.fullMs) / total((r) => r.incMs)).toFixed(1)}x`,
);
