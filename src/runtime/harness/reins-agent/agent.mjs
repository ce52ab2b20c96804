#!/usr/bin/env node
// reins-agent: a minimal agent loop. One node process, no dependencies, OpenAI chat dialect
// (streamed), four workspace tools. Usage:
//   node agent.mjs "<instruction>"
// Environment:
//   REINS_BASE_URL   OpenAI-style base URL including /v1 (or OPENAI_BASE_URL)
//   REINS_API_KEY    bearer key (or OPENAI_API_KEY)
//   REINS_MODEL      model name (or OPENAI_MODEL)
//   REINS_WORKSPACE  directory the file tools are confined to (default: the current directory)
//   REINS_MAX_TURNS  model calls before giving up (default 30)
//   REINS_MAX_TOKENS max_tokens per call (default: not sent)
//   REINS_RETRIES    retries of a failed model call (default 4)
//   REINS_REQUEST_TIMEOUT_SECONDS per model call (default 600)
//   REINS_TOOLS      comma-separated tools to offer (default: all four)
//   REINS_SYSTEM_PROMPT  replaces the system prompt ({workspace} is substituted)
//   REINS_APPEND_SYSTEM_PROMPT  added to the end of the system prompt, after a blank line
//   REINS_MCP_SERVERS  JSON [{name, url}] of streamable-HTTP MCP servers (bearer REINS_API_KEY); tool T of S is offered as S__T
// stdout: the final answer. stderr: one line per step. Exit: 0 the model answered without a tool
// call, 1 the model endpoint failed, 2 usage, 3 out of turns.
import process from "node:process";
import path from "node:path";
import { complete, ModelError } from "./client.mjs";
import { TOOL_SCHEMAS, runTool } from "./tools.mjs";
import { connectMcp } from "./mcp.mjs";

const SYSTEM_PROMPT = `You are an autonomous software agent working alone in a workspace directory: {workspace}.
Carry out the user's task completely, using the tools. There is nobody to ask: make reasonable choices yourself.
- read_file, write_file and list_files take paths relative to the workspace; they cannot reach outside it.
- run_command runs a bash command in the workspace and returns its exit code and output.
- Check your work when you can (read the file back, run the tests).
When the task is done, answer with a short summary of what you did and call no tool.`;

function log(line) {
  process.stderr.write(`[reins-agent] ${line}\n`);
}

function readConfig(env, argv) {
  const args = argv.slice(2);
  if (args[0] === "--") args.shift();
  const instruction = args.join(" ").trim() || env.REINS_INSTRUCTION || "";
  const config = {
    instruction,
    baseUrl: env.REINS_BASE_URL || env.OPENAI_BASE_URL || "",
    apiKey: env.REINS_API_KEY || env.OPENAI_API_KEY || "",
    model: env.REINS_MODEL || env.OPENAI_MODEL || "",
    workspace: path.resolve(env.REINS_WORKSPACE || process.cwd()),
    maxTurns: Number(env.REINS_MAX_TURNS || 30),
    maxTokens: env.REINS_MAX_TOKENS ? Number(env.REINS_MAX_TOKENS) : undefined,
    retries: Number(env.REINS_RETRIES ?? 4),
    requestTimeoutMs: Number(env.REINS_REQUEST_TIMEOUT_SECONDS || 600) * 1000,
    tools: env.REINS_TOOLS ? env.REINS_TOOLS.split(",").map((t) => t.trim()).filter(Boolean) : undefined,
    systemPrompt: [env.REINS_SYSTEM_PROMPT || SYSTEM_PROMPT, env.REINS_APPEND_SYSTEM_PROMPT].filter(Boolean).join("\n\n"),
  };
  const missing = [];
  if (!config.instruction) missing.push("an instruction (first argument)");
  if (!config.baseUrl) missing.push("REINS_BASE_URL");
  if (!config.model) missing.push("REINS_MODEL");
  if (!(config.maxTurns >= 1)) missing.push("REINS_MAX_TURNS >= 1");
  const known = TOOL_SCHEMAS.map((t) => t.function.name);
  for (const t of config.tools ?? []) if (!known.includes(t)) missing.push(`REINS_TOOLS: a known tool instead of "${t}" (${known.join(", ")})`);
  return { config, missing };
}

/** The assistant message as it goes back into the conversation: text, reasoning and tool calls unchanged. */
function assistantMessage(turn) {
  const message = { role: "assistant", content: turn.content };
  if (turn.reasoning) message.reasoning_content = turn.reasoning;
  if (turn.toolCalls.length > 0) {
    message.tool_calls = turn.toolCalls.map((c, i) => ({
      id: c.id || `call_${i}`,
      type: "function",
      function: { name: c.function.name, arguments: c.function.arguments },
    }));
  }
  return message;
}

async function main() {
  const { config, missing } = readConfig(process.env, process.argv);
  if (missing.length > 0) {
    log(`missing ${missing.join(", ")}`);
    return 2;
  }
  const mcp = process.env.REINS_MCP_SERVERS ? await connectMcp(process.env.REINS_MCP_SERVERS, config.apiKey, log) : undefined;
  const own = config.tools ? TOOL_SCHEMAS.filter((t) => config.tools.includes(t.function.name)) : TOOL_SCHEMAS;
  const offered = mcp ? [...own, ...mcp.schemas] : own;
  const messages = [
    { role: "system", content: config.systemPrompt.replace("{workspace}", config.workspace) },
    { role: "user", content: config.instruction },
  ];
  for (let turn = 1; turn <= config.maxTurns; turn++) {
    let answer;
    try {
      answer = await complete(config, messages, offered, log);
    } catch (e) {
      if (e instanceof ModelError) {
        log(`model call ${turn} failed: ${e.message}`);
        return 1;
      }
      throw e;
    }
    const message = assistantMessage(answer);
    messages.push(message);
    if (!message.tool_calls) {
      log(`done after ${turn} model call(s) (finish: ${answer.finish ?? "none"})`);
      process.stdout.write(`${answer.content}\n`);
      return 0;
    }
    for (const call of message.tool_calls) {
      log(`turn ${turn}: ${call.function.name} ${call.function.arguments.slice(0, 200)}`);
      const result = mcp?.owns(call.function.name) ? await mcp.call(call.function.name, call.function.arguments) : await runTool(config.workspace, call.function.name, call.function.arguments);
      messages.push({ role: "tool", tool_call_id: call.id, content: result });
    }
  }
  log(`stopped: no final answer after ${config.maxTurns} model calls`);
  return 3;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    log(`internal error: ${e.stack ?? e}`);
    process.exit(1);
  },
);
