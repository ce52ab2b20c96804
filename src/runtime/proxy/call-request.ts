/** Stage 1 of a call: read the body, parse it in the dialect, classify the call. */
import type { IncomingMessage } from "node:http";
import type { CanonicalRequest } from "./canonical.js";
import { classifyCall } from "./classify.js";
import type { DialectHandler, ProxyErrorKind } from "./dialects/dialect.js";
import { readJsonBody } from "./http-body.js";
import type { CallErrorKind, PendingCall } from "./pending-call.js";

export interface CallRequest {
  canonical: CanonicalRequest;
  /** The request body as received (dialects echo parts of it). */
  body: Record<string, unknown>;
}

/** A call the proxy refuses before generating: the dialect's error kind and the record's. */
export interface Refusal {
  ok: false;
  kind: ProxyErrorKind;
  message: string;
  recordKind: CallErrorKind;
}

export async function readCallRequest(call: PendingCall, dialect: DialectHandler, req: IncomingMessage): Promise<{ ok: true; request: CallRequest } | Refusal> {
  const body = await readJsonBody(req);
  if (!body.ok) return { ok: false, kind: body.kind, message: body.message, recordKind: "bad-request" };
  const parsed = dialect.parseRequest(body.value);
  if (!parsed.ok) return { ok: false, kind: "bad-request", message: parsed.message, recordKind: "bad-request" };
  const canonical = parsed.request;
  call.record.model = canonical.model;
  call.record.stream = canonical.stream;
  call.record.callClass = classifyCall(call.rollout.callClasses, canonical, req.headers);
  return { ok: true, request: { canonical, body: body.value as Record<string, unknown> } };
}
