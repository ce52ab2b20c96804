/**
 * The front's engine, used from a proxy process: when the proxy is given an engine instance (the
 * training loop's, which it reloads with each published version), that one engine serves every
 * process. A process asks the front to generate (prompt ids and sampling, no signal), the front
 * runs the engine and sends the chunks, then the result or the engine's error; a client that goes
 * away aborts the generation there. The processes keep everything else: HTTP, tokenizing,
 * rendering, parsing and writing the answers.
 */
import {
  type Engine,
  EngineError,
  type EngineErrorKind,
  type EngineInfo,
  type GenerateChunk,
  type GenerateRequest,
  type GenerateResult,
} from "../../engines/engine.js";

export type GenerateAsk = Omit<GenerateRequest, "signal">;

export type EngineReply =
  | { t: "gen-chunk"; id: number; chunk: GenerateChunk }
  | { t: "gen-done"; id: number; result: GenerateResult }
  | { t: "gen-failed"; id: number; message: string; kind?: EngineErrorKind; partial?: GenerateResult };

/** What a process knows of the front's engine. */
export interface RelayedEngineSpec {
  type: string;
  streams: boolean;
  info?: EngineInfo;
}

export type EngineAsk = { t: "generate"; id: number; req: GenerateAsk; stream: boolean } | { t: "abort"; id: number };

interface Pending {
  onChunk?: (c: GenerateChunk) => void;
  resolve(r: GenerateResult): void;
  reject(e: Error): void;
}

/** In a process: an Engine whose work is done by the front's engine. */
export class RelayedEngine implements Engine {
  readonly type: string;
  private readonly pending = new Map<number, Pending>();
  private next = 0;

  /** Present when the front's engine streams. */
  readonly generateStream?: (req: GenerateRequest, onChunk: (c: GenerateChunk) => void) => Promise<GenerateResult>;
  /** Present when the front's engine has a capability probe. */
  readonly info?: () => EngineInfo;

  constructor(
    front: RelayedEngineSpec,
    private readonly ask: (msg: EngineAsk) => void,
  ) {
    this.type = front.type;
    if (front.streams) this.generateStream = (req, onChunk) => this.start(req, true, onChunk);
    if (front.info) {
      const probe = front.info;
      this.info = () => probe;
    }
  }

  generate(req: GenerateRequest): Promise<GenerateResult> {
    return this.start(req, false);
  }

  /** A reply from the front. */
  answer(msg: EngineReply): void {
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.t === "gen-chunk") return p.onChunk?.(msg.chunk);
    this.pending.delete(msg.id);
    if (msg.t === "gen-done") p.resolve(msg.result);
    else p.reject(new EngineError(msg.message, msg.kind ?? "failed", msg.partial));
  }

  /** The front is gone: every generation fails as an unreachable engine. */
  failAll(message: string): void {
    for (const p of this.pending.values()) p.reject(new EngineError(message, "unreachable"));
    this.pending.clear();
  }

  private start(req: GenerateRequest, stream: boolean, onChunk?: (c: GenerateChunk) => void): Promise<GenerateResult> {
    const id = this.next++;
    const { signal, ...ask } = req;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, ...(onChunk ? { onChunk } : {}) });
      signal?.addEventListener("abort", () => this.ask({ t: "abort", id }), { once: true });
      this.ask({ t: "generate", id, req: ask, stream });
    });
  }
}

/** In the front: serve a process's generations with `engine`; `reply` sends to that process. */
export function serveGenerations(engine: Engine, reply: (msg: EngineReply) => void): ServedGenerations {
  const running = new Map<number, AbortController>();
  return {
    ask(msg) {
      if (msg.t === "abort") return void running.get(msg.id)?.abort();
      const abort = new AbortController();
      running.set(msg.id, abort);
      const req: GenerateRequest = { ...msg.req, signal: abort.signal };
      const done =
        msg.stream && engine.generateStream ? engine.generateStream(req, (chunk) => reply({ t: "gen-chunk", id: msg.id, chunk })) : engine.generate(req);
      done
        .then(
          (result) => reply({ t: "gen-done", id: msg.id, result }),
          (err: unknown) => {
            const e = err as Error;
            reply(
              e instanceof EngineError
                ? { t: "gen-failed", id: msg.id, message: e.message, kind: e.kind, ...(e.partial ? { partial: e.partial } : {}) }
                : { t: "gen-failed", id: msg.id, message: `engine failed: ${e?.message ?? String(err)}` },
            );
          },
        )
        .finally(() => running.delete(msg.id));
    },
    abortAll() {
      for (const abort of running.values()) abort.abort();
    },
  };
}

/** One process's generations on the front's engine: its asks, and all of them stopped when it dies. */
export interface ServedGenerations {
  ask(msg: EngineAsk): void;
  abortAll(): void;
}
