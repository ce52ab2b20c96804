/**
 * The HTTP plumbing every engine behind an inference server shares: JSON requests with the
 * Model's API key, server-sent events, and a base class that turns one server's request/response
 * shape (`buildRequest`, `readPiece`) into `generate` and `generateStream`. A completion that
 * stopped on a stop token the server left out of its ids gets that id appended (logprob 0), so
 * the raw completion always ends the way the model ended it.
 */
import type { Engine, GenerateChunk, GenerateRequest, GenerateResult } from "./engine.js";
import { EngineError } from "./engine.js";

/** Tokens of one response or stream event, with the finish it reached (if any). */
export interface Piece {
  ids: number[];
  logprobs: number[];
  finish?: "stop" | "length";
  stopId?: number;
  /** The weights version the server says produced these tokens. */
  weightsVersion?: string;
}

/** `baseUrl` without trailing slashes and without a trailing `/v1`: where a server's own routes live. */
export function serverRoot(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
}

/** JSON content type, plus `authorization: Bearer …` when `apiKeyEnv` names a set variable. */
export function buildHeaders(apiKeyEnv: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  const key = apiKeyEnv ? process.env[apiKeyEnv] : undefined;
  if (key) headers.authorization = `Bearer ${key}`;
  return headers;
}

/** A 3xx answer (fetch with `redirect: "manual"` hands it back instead of following it). */
export function isRedirect(res: Response): boolean {
  return res.type === "opaqueredirect" || (res.status >= 300 && res.status < 400);
}

/** Why a redirect is not followed: the request's key would go wherever it points. */
export function redirectRefused(url: string, res: Response): string {
  const to = res.headers.get("location");
  return `${url} answered HTTP ${res.status || 3} redirecting${to ? ` to ${to.slice(0, 200)}` : ""}; reins does not follow redirects, so an API key never reaches another address: set the endpoint to the final address`;
}

/** POST a JSON body; unreachable, redirecting and non-2xx answers become EngineErrors. */
export async function postJson(url: string, body: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> {
  let res: Response;
  try {
    // A key never follows a redirect: another host would receive it (`redirect: "manual"`, below).
    res = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), redirect: "manual", ...(signal ? { signal } : {}) });
  } catch (err) {
    if (signal?.aborted) throw new EngineError("generation aborted", "failed");
    throw new EngineError(`cannot reach ${url}: ${(err as Error).message}`, "unreachable");
  }
  if (isRedirect(res)) {
    await res.body?.cancel().catch(() => undefined);
    throw new EngineError(redirectRefused(url, res), "failed");
  }
  if (!res.ok) {
    const text = await res.text().catch(() => "");
    throw new EngineError(`${url} answered HTTP ${res.status}: ${text.slice(0, 300)}`, "failed");
  }
  return res;
}

/** The JSON body of a response, or an EngineError naming the endpoint. */
export async function readJson(res: Response, url: string): Promise<unknown> {
  try {
    return await res.json();
  } catch {
    throw new EngineError(`${url} answered with a body that is not JSON`, "bad-response");
  }
}

/** The `data:` payloads of a server-sent-event response body. */
export async function* sseData(res: Response, signal?: AbortSignal): AsyncGenerator<string> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = res.body.getReader();
  try {
    for (;;) {
      if (signal?.aborted) throw new EngineError("generation aborted", "failed");
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
        const data = block
          .split(/\r?\n/)
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, ""))
          .join("\n");
        if (data) yield data;
      }
    }
  } catch (err) {
    if (err instanceof EngineError) throw err;
    throw new EngineError(`stream from the engine broke: ${(err as Error).message}`, "failed");
  } finally {
    reader.releaseLock();
  }
}

/** One result from a completion's pieces, in order; the stop id is appended when the server left it out. */
export function assemblePieces(pieces: readonly Piece[], stopIds: readonly number[], weightsVersion: string): GenerateResult {
  const ids: number[] = [];
  const logprobs: number[] = [];
  let finish: "stop" | "length" = "stop";
  let stopId: number | undefined;
  let version = weightsVersion;
  for (const p of pieces) {
    for (let i = 0; i < p.ids.length; i++) {
      ids.push(p.ids[i]!);
      logprobs.push(p.logprobs[i] ?? 0);
    }
    if (p.finish) finish = p.finish;
    if (p.stopId !== undefined) stopId = p.stopId;
    if (p.weightsVersion !== undefined) version = p.weightsVersion;
  }
  const last = ids[ids.length - 1];
  if (finish === "stop" && stopIds.length > 0 && (last === undefined || !stopIds.includes(last))) {
    ids.push(stopId !== undefined && stopIds.includes(stopId) ? stopId : stopIds[0]!);
    logprobs.push(0);
  }
  return { ids, logprobs, finish, weightsVersion: version };
}

/**
 * An engine behind an HTTP server. Subclasses give the request for a call and read one response
 * (or one stream event) into a Piece; `startDelta` turns stream events that repeat the whole
 * output so far into deltas (SGLang). Calls wait for a reload in progress, then carry the
 * version current when they were sent (a reload waits for in-flight calls on the server side).
 */
export abstract class HttpEngine implements Engine {
  abstract readonly type: string;
  protected weightsVersion: string;
  protected reloading: Promise<void> | undefined;

  constructor(
    protected readonly baseUrl: string,
    protected readonly apiKeyEnv: string | undefined,
    initialVersion: string,
  ) {
    this.weightsVersion = initialVersion;
  }

  protected abstract buildRequest(req: GenerateRequest, stream: boolean): { url: string; body: unknown };
  protected abstract readPiece(json: unknown): Piece | undefined;
  /** Stream events: by default each carries only its new tokens. */
  protected streamDelta(piece: Piece, _seen: number): Piece {
    return piece;
  }

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    const version = await this.currentVersion();
    const { url, body } = this.buildRequest(req, false);
    const json = await readJson(await postJson(url, body, buildHeaders(this.apiKeyEnv), req.signal), url);
    const piece = this.readPiece(json);
    if (!piece) throw new EngineError(`${url} answered without token ids and logprobs`, "bad-response");
    return assemblePieces([piece], req.sampling.stopIds, version);
  }

  async generateStream(req: GenerateRequest, onChunk: (c: GenerateChunk) => void): Promise<GenerateResult> {
    const version = await this.currentVersion();
    const { url, body } = this.buildRequest(req, true);
    const res = await postJson(url, body, buildHeaders(this.apiKeyEnv), req.signal);
    const pieces: Piece[] = [];
    let seen = 0;
    for await (const data of sseData(res, req.signal)) {
      if (data === "[DONE]") break;
      let json: unknown;
      try {
        json = JSON.parse(data);
      } catch {
        throw new EngineError(`${url} streamed an event that is not JSON`, "bad-response");
      }
      const read = this.readPiece(json);
      if (!read) continue;
      const piece = this.streamDelta(read, seen);
      seen += piece.ids.length;
      pieces.push(piece);
      if (piece.ids.length > 0) onChunk({ ids: piece.ids, logprobs: piece.logprobs });
    }
    return assemblePieces(pieces, req.sampling.stopIds, version);
  }

  /** Name the weights the server serves now (reins run: the weights it started the server on). */
  labelVersion(version: string): void {
    this.weightsVersion = version;
  }

  private async currentVersion(): Promise<string> {
    while (this.reloading) await this.reloading.catch(() => undefined);
    return this.weightsVersion;
  }

  /** Run `load` as the reload in progress: calls sent meanwhile wait for it. */
  protected async runReload(version: string, load: () => Promise<void>): Promise<void> {
    while (this.reloading) await this.reloading.catch(() => undefined);
    const done = load().then(() => {
      this.weightsVersion = version;
    });
    this.reloading = done;
    try {
      await done;
    } finally {
      this.reloading = undefined;
    }
  }
}
