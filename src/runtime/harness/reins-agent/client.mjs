// OpenAI chat-completions client of reins-agent: one streamed request, assembled into an assistant
// message. Retries (same request bytes) on 408/409/429/5xx, network errors and streams that end early.
import http from "node:http";
import https from "node:https";

const RETRYABLE_STATUS = new Set([408, 409, 429, 500, 502, 503, 504]);

export class ModelError extends Error {
  constructor(message, retryable) {
    super(message);
    this.retryable = retryable;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Splits an SSE body into `data:` payloads. */
async function* sseData(body) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      const data = block
        .split(/\r?\n/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data !== "") yield data;
    }
  }
}

/** Folds stream chunks into {content, reasoning, toolCalls, finish}. */
function assemble(state, chunk) {
  const choice = chunk.choices?.[0];
  if (!choice) return;
  const delta = choice.delta ?? {};
  if (typeof delta.content === "string") state.content += delta.content;
  const reasoning = delta.reasoning_content ?? delta.reasoning;
  if (typeof reasoning === "string") state.reasoning += reasoning;
  for (const part of delta.tool_calls ?? []) {
    const index = part.index ?? state.toolCalls.length;
    const call = (state.toolCalls[index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
    if (part.id) call.id = part.id;
    if (part.function?.name) call.function.name += part.function.name;
    if (typeof part.function?.arguments === "string") call.function.arguments += part.function.arguments;
  }
  if (choice.finish_reason) state.finish = choice.finish_reason;
}

function fromJson(body) {
  const message = body.choices?.[0]?.message ?? {};
  return {
    content: message.content ?? "",
    reasoning: message.reasoning_content ?? message.reasoning ?? "",
    toolCalls: message.tool_calls ?? [],
    finish: body.choices?.[0]?.finish_reason ?? null,
  };
}

/**
 * POSTs the body: resolves with the response (its headers in), rejects when the endpoint cannot be
 * reached. node:http rather than fetch: an agent process starts and runs a rollout on about a
 * third of the CPU (fetch's undici is compiled on first use, in every process). The whole call, its
 * streamed body included, is cut after config.requestTimeoutMs.
 */
function post(config, bodyText) {
  const url = new URL(`${config.baseUrl.replace(/\/+$/, "")}/chat/completions`);
  const headers = { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${config.apiKey}`, "content-length": Buffer.byteLength(bodyText) };
  return new Promise((resolve, reject) => {
    const req = (url.protocol === "https:" ? https : http).request(url, { method: "POST", headers }, resolve);
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${config.requestTimeoutMs / 1000} s`)), config.requestTimeoutMs);
    req.on("close", () => clearTimeout(timer));
    req.on("error", reject);
    req.end(bodyText);
  });
}

/** The response body as text. */
async function readText(response) {
  let text = "";
  response.setEncoding("utf8");
  for await (const chunk of response) text += chunk;
  return text;
}

async function requestOnce(config, bodyText) {
  let response;
  try {
    response = await post(config, bodyText);
  } catch (e) {
    throw new ModelError(`cannot reach the model endpoint: ${e.cause?.message ?? e.message}`, true);
  }
  const status = response.statusCode ?? 0;
  if (status < 200 || status > 299) {
    const text = await readText(response).catch(() => "");
    throw new ModelError(`model endpoint answered HTTP ${status}: ${text.slice(0, 500)}`, RETRYABLE_STATUS.has(status));
  }
  if (!(response.headers["content-type"] ?? "").includes("text/event-stream")) {
    let body;
    try {
      body = JSON.parse(await readText(response));
    } catch (e) {
      throw new ModelError(`the response broke or is not JSON: ${e.message}`, true);
    }
    return fromJson(body);
  }
  const state = { content: "", reasoning: "", toolCalls: [], finish: null };
  let done = false;
  try {
    for await (const data of sseData(response)) {
      if (data === "[DONE]") { done = true; break; }
      let chunk;
      try { chunk = JSON.parse(data); } catch { throw new ModelError(`unparseable stream chunk: ${data.slice(0, 200)}`, false); }
      if (chunk.error) throw new ModelError(`model endpoint error: ${chunk.error.message ?? JSON.stringify(chunk.error)}`, true);
      assemble(state, chunk);
    }
  } catch (e) {
    if (e instanceof ModelError) throw e;
    throw new ModelError(`the response stream broke: ${e.cause?.message ?? e.message}`, true);
  }
  if (!done && state.finish === null) throw new ModelError("the response stream ended before it finished", true);
  state.toolCalls = state.toolCalls.filter(Boolean);
  return state;
}

/**
 * One model turn: {content, reasoning, toolCalls, finish}. The request bytes are built once, so a
 * retry sends exactly what the failed attempt sent.
 */
export async function complete(config, messages, tools, log) {
  const body = { model: config.model, messages, tools, tool_choice: "auto", stream: true, stream_options: { include_usage: true } };
  if (config.maxTokens) body.max_tokens = config.maxTokens;
  const bodyText = JSON.stringify(body);
  for (let attempt = 0; ; attempt++) {
    try {
      return await requestOnce(config, bodyText);
    } catch (e) {
      if (!(e instanceof ModelError) || !e.retryable || attempt >= config.retries) throw e;
      const wait = Math.min(500 * 2 ** attempt, 8000);
      log(`retrying in ${wait} ms (${attempt + 1}/${config.retries}): ${e.message}`);
      await sleep(wait);
    }
  }
}
