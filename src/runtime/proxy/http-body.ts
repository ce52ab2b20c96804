/**
 * Request bodies: read with a size limit and a deadline, their JSON shape measured as they arrive
 * (./json-shape.ts), decompressed (identity, gzip, deflate, br; zstd where the Node build has it),
 * parsed as JSON. Problems come back as values for a dialect error; a refusal that leaves the body
 * unread says so (`unread`), and the connection is then closed after the answer.
 */
import type { IncomingMessage } from "node:http";
import * as zlib from "node:zlib";
import type { Code } from "../../compiler/contract/codes.js";
import type { ProxyErrorKind } from "./dialects/dialect.js";
import { JsonShape } from "./json-shape.js";
import type { ProxyLimits } from "./limits.js";

export type BodyLimits = Pick<ProxyLimits, "maxBodyBytes" | "maxJsonDepth" | "maxJsonValues" | "bodyTimeoutMs">;

export type BodyFailure = { ok: false; kind: ProxyErrorKind; message: string; code?: Code; unread?: boolean };
export type BodyResult = { ok: true; value: unknown; bytes: number } | BodyFailure;

/** The raw body as received (still compressed): I/O only, so many can arrive at once. */
export type RawBody = { ok: true; raw: Buffer; encoding: string; shape: JsonShape | undefined } | BodyFailure;

/** Read a body within the byte limit and the deadline, measuring its JSON shape as it arrives when it is not compressed. */
export async function readBody(req: IncomingMessage, limits: BodyLimits): Promise<RawBody> {
  const encoding = String(req.headers["content-encoding"] ?? "identity")
    .toLowerCase()
    .trim();
  const identity = encoding === "" || encoding === "identity";
  const shape = identity ? new JsonShape(limits.maxJsonDepth, limits.maxJsonValues) : undefined;
  const raw = await readRaw(req, limits, shape);
  return raw.ok ? { ok: true, raw: raw.value, encoding, shape } : raw;
}

/** Decompress, measure and parse a body read by readBody (CPU work: the caller chooses when). */
export function decodeJsonBody(body: Extract<RawBody, { ok: true }>, limits: BodyLimits): BodyResult {
  const { raw, encoding } = body;
  const limit = limits.maxBodyBytes;
  let bytes: Buffer;
  try {
    bytes = decompress(raw, encoding, limit);
  } catch (err) {
    const e = err as Error & { code?: string };
    if (e.code === "UNSUPPORTED") return { ok: false, kind: "unsupported-media", message: e.message };
    if (e.code === "ERR_BUFFER_TOO_LARGE" || /too large|maxOutputLength/i.test(e.message)) {
      return { ok: false, kind: "too-large", code: "RequestBodyTooLarge", message: `request body is larger than ${limit} bytes after decompression` };
    }
    return { ok: false, kind: "bad-request", message: `request body could not be decompressed (${encoding}): ${e.message}` };
  }
  if (!body.shape) {
    const why = new JsonShape(limits.maxJsonDepth, limits.maxJsonValues).feed(bytes);
    if (why) return { ok: false, kind: "bad-request", code: "RequestJsonTooComplex", message: why };
  }
  if (bytes.length === 0) return { ok: false, kind: "bad-request", message: "request body is empty" };
  try {
    return { ok: true, value: JSON.parse(bytes.toString("utf8")), bytes: bytes.length };
  } catch (err) {
    return { ok: false, kind: "bad-request", message: `request body is not valid JSON: ${(err as Error).message}` };
  }
}

function readRaw(req: IncomingMessage, limits: BodyLimits, shape: JsonShape | undefined): Promise<{ ok: true; value: Buffer } | BodyFailure> {
  const limit = limits.maxBodyBytes;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (result: { ok: true; value: Buffer } | BodyFailure): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      chunks.length = 0;
      if (!result.ok) req.resume();
      resolve(result);
    };
    const declared = Number(req.headers["content-length"] ?? NaN);
    if (Number.isFinite(declared) && declared > limit) {
      finish({ ok: false, kind: "too-large", code: "RequestBodyTooLarge", unread: true, message: `request body is ${declared} bytes; the limit is ${limit}` });
      return;
    }
    timer = setTimeout(() => {
      finish({
        ok: false,
        kind: "timeout",
        code: "RequestBodyTimeout",
        unread: true,
        message: `the request body did not arrive within ${limits.bodyTimeoutMs} ms (${size} bytes received)`,
      });
    }, limits.bodyTimeoutMs);
    req.on("data", (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > limit) {
        finish({ ok: false, kind: "too-large", code: "RequestBodyTooLarge", unread: true, message: `request body is larger than ${limit} bytes` });
        return;
      }
      const why = shape?.feed(c);
      if (why) {
        finish({ ok: false, kind: "bad-request", code: "RequestJsonTooComplex", unread: true, message: why });
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => finish({ ok: true, value: Buffer.concat(chunks) }));
    req.on("close", () => finish({ ok: false, kind: "bad-request", message: "the client closed the connection before the request body ended" }));
    req.on("error", (err) => finish({ ok: false, kind: "bad-request", message: `request body could not be read: ${err.message}` }));
  });
}

function decompress(buf: Buffer, encoding: string, limit: number): Buffer {
  const opts = { maxOutputLength: limit };
  switch (encoding) {
    case "":
    case "identity":
      return buf;
    case "gzip":
    case "x-gzip":
      return zlib.gunzipSync(buf, opts);
    case "deflate":
      return zlib.inflateSync(buf, opts);
    case "br":
      return zlib.brotliDecompressSync(buf, opts);
    case "zstd": {
      const z = zlib as unknown as { zstdDecompressSync?: (b: Buffer, o: unknown) => Buffer };
      if (z.zstdDecompressSync) return z.zstdDecompressSync(buf, opts);
      break;
    }
  }
  throw Object.assign(new Error(`content-encoding ${JSON.stringify(encoding)} is not supported; send identity, gzip, deflate or br`), { code: "UNSUPPORTED" });
}
