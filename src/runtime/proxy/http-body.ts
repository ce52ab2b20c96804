/**
 * Request bodies: read with a size limit, decompressed (identity, gzip, deflate, br; zstd where
 * the Node build has it), parsed as JSON. Problems come back as values for a dialect error.
 */
import type { IncomingMessage } from "node:http";
import * as zlib from "node:zlib";
import type { ProxyErrorKind } from "./dialects/dialect.js";

export const MAX_BODY_BYTES = 32 * 1024 * 1024;

export type BodyResult = { ok: true; value: unknown } | { ok: false; kind: ProxyErrorKind; message: string };

export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<BodyResult> {
  const raw = await readRaw(req, limit);
  if (!raw.ok) return raw;
  const encoding = String(req.headers["content-encoding"] ?? "identity").toLowerCase().trim();
  let bytes: Buffer;
  try {
    bytes = decompress(raw.value, encoding, limit);
  } catch (err) {
    const e = err as Error & { code?: string };
    if (e.code === "UNSUPPORTED") return { ok: false, kind: "unsupported-media", message: e.message };
    if (e.code === "ERR_BUFFER_TOO_LARGE" || /too large|maxOutputLength/i.test(e.message)) {
      return { ok: false, kind: "too-large", message: `request body is larger than ${limit} bytes after decompression` };
    }
    return { ok: false, kind: "bad-request", message: `request body could not be decompressed (${encoding}): ${e.message}` };
  }
  if (bytes.length === 0) return { ok: false, kind: "bad-request", message: "request body is empty" };
  try {
    return { ok: true, value: JSON.parse(bytes.toString("utf8")) };
  } catch (err) {
    return { ok: false, kind: "bad-request", message: `request body is not valid JSON: ${(err as Error).message}` };
  }
}

function readRaw(req: IncomingMessage, limit: number): Promise<{ ok: true; value: Buffer } | { ok: false; kind: ProxyErrorKind; message: string }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const declared = Number(req.headers["content-length"] ?? NaN);
    if (Number.isFinite(declared) && declared > limit) {
      done = true;
      req.resume();
      resolve({ ok: false, kind: "too-large", message: `request body is ${declared} bytes; the limit is ${limit}` });
      return;
    }
    req.on("data", (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > limit) {
        done = true;
        chunks.length = 0;
        resolve({ ok: false, kind: "too-large", message: `request body is larger than ${limit} bytes` });
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      if (!done) {
        done = true;
        resolve({ ok: true, value: Buffer.concat(chunks) });
      }
    });
    req.on("close", () => {
      if (!done) {
        done = true;
        resolve({ ok: false, kind: "bad-request", message: "the client closed the connection before the request body ended" });
      }
    });
    req.on("error", (err) => {
      if (!done) {
        done = true;
        resolve({ ok: false, kind: "bad-request", message: `request body could not be read: ${err.message}` });
      }
    });
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
