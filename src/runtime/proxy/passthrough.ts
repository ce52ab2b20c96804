/**
 * The proxy's pass-through to a hosted policy (a Model with engine type hosted): a rollout's
 * request goes to the hosted API as the harness wrote it — the model name, temperature and
 * max_tokens set by the Model, the API's key added here (the harness only ever holds its rollout
 * key) — and the answer comes back as the API sent it, streamed or not. There are no token ids:
 * the call's record says so (`hosted`: the API, HTTP status, the API's own token usage), and a
 * run through it is evaluation only. The per-rollout key, open-request limit and body limits are
 * the same as the token path's.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ResolvedHostedApi, ResolvedModel } from "../../compiler/contract/plan.js";
import { hostedHeaders, hostedUrl } from "../engines/hosted-api.js";
import { isRedirect, redirectRefused } from "../engines/http.js";
import type { CallRecord } from "../records/index.js";
import { answerError, closeAfterAnswer } from "./call-answer.js";
import type { DialectHandler } from "./dialects/dialect.js";
import { decodeJsonBody, readBody } from "./http-body.js";
import type { ProxyLimits } from "./limits.js";
import { openCall, type PendingCall } from "./pending-call.js";
import type { Rollout } from "./rollouts.js";

export interface PassthroughDeps {
  api: ResolvedHostedApi;
  sampling: ResolvedModel["sampling"];
  limits: ProxyLimits;
  env: NodeJS.ProcessEnv;
  record(rollout: Rollout, record: CallRecord): void;
}

/** Response headers worth handing back (not hop-by-hop ones, not the upstream's cookies). */
const KEPT_HEADERS = ["content-type", "request-id", "x-request-id", "retry-after"];
/** Harness headers that choose API features, passed on (never its auth headers). */
const FORWARDED_HEADERS = ["anthropic-beta", "anthropic-version", "openai-beta"];

export async function passThroughCall(
  deps: PassthroughDeps,
  rollout: Rollout,
  dialect: DialectHandler,
  endpoint: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const call = openCall(rollout, dialect, deps.record);
  call.record.weightsVersion = `hosted:${deps.api.model}`;
  call.record.hosted = { api: deps.api.api, model: deps.api.model };
  if (rollout.open >= deps.limits.maxRequestsPerRollout) {
    return refuse(
      call,
      res,
      dialect,
      "too-many-requests",
      `the rollout has ${rollout.open} requests open; the limit is ${deps.limits.maxRequestsPerRollout}`,
      true,
    );
  }
  rollout.open++;
  res.once("close", () => rollout.open--);
  if (dialect.name !== deps.api.api) {
    return refuse(
      call,
      res,
      dialect,
      "not-found",
      `this proxy passes calls to a hosted ${deps.api.api} model; ${dialect.name} requests have nowhere to go`,
      true,
    );
  }
  const raw = await readBody(req, deps.limits);
  if (!raw.ok) return refuse(call, res, dialect, raw.kind, raw.message, raw.unread);
  const decoded = decodeJsonBody(raw, deps.limits);
  if (!decoded.ok) return refuse(call, res, dialect, decoded.kind, decoded.message);
  if (typeof decoded.value !== "object" || decoded.value === null || Array.isArray(decoded.value)) {
    return refuse(call, res, dialect, "bad-request", "the request body is not a JSON object");
  }
  const body = decoded.value as Record<string, unknown>;
  call.record.bodyBytes = decoded.bytes;
  call.record.model = typeof body.model === "string" ? body.model : "";
  call.record.stream = body.stream === true;
  const key = deps.env[deps.api.apiKeyEnv];
  if (!key) return fail(call, res, dialect, `the hosted API's key is not set (environment variable ${deps.api.apiKeyEnv})`);
  const outgoing = endpoint.endsWith("count_tokens") ? { ...body, model: deps.api.model } : withSampling(body, deps);
  const headers = hostedHeaders(deps.api, key);
  for (const h of FORWARDED_HEADERS) {
    const v = req.headers[h];
    if (typeof v === "string") headers[h] = v;
  }
  const abort = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) abort.abort();
  });
  const url = hostedUrl(deps.api, endpoint);
  call.record.timings.engineStartMs = Date.now();
  let upstream: Response;
  try {
    upstream = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify(outgoing),
      redirect: "manual",
      signal: AbortSignal.any([abort.signal, AbortSignal.timeout(deps.api.timeoutSeconds * 1000)]),
    });
  } catch (e) {
    if (abort.signal.aborted) return gone(call);
    const cause = (e as { cause?: { code?: string } }).cause;
    return fail(call, res, dialect, `the hosted API at ${url} could not be reached: ${cause?.code ?? (e as Error).message}`);
  }
  if (isRedirect(upstream)) {
    await upstream.body?.cancel().catch(() => undefined);
    return fail(call, res, dialect, `the hosted API: ${redirectRefused(url, upstream)}`);
  }
  const out: Record<string, string> = {};
  for (const h of KEPT_HEADERS) {
    const v = upstream.headers.get(h);
    if (v !== null) out[h] = v;
  }
  res.writeHead(upstream.status, out);
  const seen: string[] = [];
  let seenChars = 0;
  try {
    for await (const chunk of upstream.body ?? []) {
      if (call.record.timings.firstTokenMs === undefined) call.record.timings.firstTokenMs = Date.now();
      const text = Buffer.from(chunk as Uint8Array);
      if (seenChars < 4 * 1024 * 1024) {
        seen.push(text.toString("utf8"));
        seenChars += text.length;
      }
      if (!res.write(text)) await new Promise((resolve) => res.once("drain", resolve));
    }
  } catch (e) {
    if (abort.signal.aborted) return gone(call);
    call.setError("engine", `the hosted API's answer broke off: ${(e as Error).message}`);
    res.destroy();
    call.finish();
    return;
  }
  call.record.timings.engineDoneMs = Date.now();
  const answer = seen.join("").replaceAll(key, "<key>");
  Object.assign(call.record.hosted!, { status: upstream.status, ...usageOf(answer) });
  call.record.finishReason = /"(stop_reason|finish_reason)"\s*:\s*"(max_tokens|length)"/.test(answer) ? "length" : "stop";
  call.record.parse = { ok: upstream.ok };
  if (!upstream.ok) call.setError("engine", `the hosted API answered HTTP ${upstream.status}: ${answer.slice(0, 300)}`);
  res.end(() => call.finish());
}

/** The Model's sampling over the harness's: its temperature, max_tokens capped by the Model's, top_p when the Model narrows it. */
function withSampling(body: Record<string, unknown>, deps: PassthroughDeps): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body, model: deps.api.model, temperature: deps.sampling.temperature };
  if (deps.sampling.topP < 1) out.top_p = deps.sampling.topP;
  const field = deps.api.api === "openai-chat" && body.max_completion_tokens !== undefined ? "max_completion_tokens" : "max_tokens";
  const asked = body[field];
  out[field] = typeof asked === "number" && asked > 0 ? Math.min(asked, deps.sampling.maxTokens) : deps.sampling.maxTokens;
  return out;
}

/** The API's own token counts, from its answer (the last value each field took, as a stream updates them). */
function usageOf(answer: string): { inputTokens?: number; outputTokens?: number } {
  const last = (field: string) => {
    const all = [...answer.matchAll(new RegExp(`"${field}"\\s*:\\s*(\\d+)`, "g"))];
    return all.length > 0 ? Number(all[all.length - 1]![1]) : undefined;
  };
  const input = last("input_tokens") ?? last("prompt_tokens");
  const output = last("output_tokens") ?? last("completion_tokens");
  return { ...(input !== undefined ? { inputTokens: input } : {}), ...(output !== undefined ? { outputTokens: output } : {}) };
}

function refuse(
  call: PendingCall,
  res: ServerResponse,
  dialect: DialectHandler,
  kind: Parameters<typeof answerError>[2],
  message: string,
  unread?: boolean,
): void {
  call.setError("bad-request", message);
  if (unread) closeAfterAnswer(res);
  answerError(res, dialect, kind, message);
  call.finish();
}

function fail(call: PendingCall, res: ServerResponse, dialect: DialectHandler, message: string): void {
  call.setError("engine", message);
  answerError(res, dialect, "engine", message);
  call.finish();
}

function gone(call: PendingCall): void {
  call.setError("client-disconnect", "the client closed the connection before the hosted API's answer was passed on", "aborted");
  call.finish();
}
