/**
 * Several proxy processes behind one port. The front (this process) accepts each connection,
 * reads its first request line, and hands the connection — socket and the bytes read — to the
 * process that serves the rollout it names: the one a registered path was given (the least loaded
 * at registration), or, for paths nobody registered (shared-key mode), the one the path hashes to.
 * From then on the front does not touch the connection; the process answers on it directly. A
 * later request on the same connection for another process's rollout is relayed there by the
 * process (./relay.ts); a harness keeps to its own rollout, so that is rare.
 *
 * The front keeps what the executor asks for synchronously: registrations (it makes the keys),
 * the records (each process sends every record as it is handed over; `settle` waits for those on
 * their way), the MCP handlers (a process relays an MCP request to the front's own loopback
 * server, which checks the key again). A process ends with the front (its IPC channel closes).
 * A process that dies takes its rollouts with it, but a new one takes its place (./restarts.ts).
 */
import { type ChildProcess, fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { ReinsError } from "../../../compiler/contract/problem.js";
import type { Code } from "../../../compiler/contract/codes.js";
import type { EngineInfo } from "../../engines/engine.js";
import { appendRecords, type CallRecord } from "../../records/index.js";
import type { McpHandler, ProxyHandle, ProxyOptions, RolloutRegistration } from "../api.js";
import { proxyLimitsOf } from "../limits.js";
import { handleMcp } from "../mcp-route.js";
import { parsePath } from "../routes.js";
import { credentialOf, sameKey } from "../rollouts.js";
import { type FromWorker, ownerOfPath, pathOfRequestLine, type RegisterOptions, type ToWorker, unpackRecord } from "./protocol.js";
import { type RelayedEngineSpec, type ServedGenerations, serveGenerations } from "./relayed-engine.js";
import { createRestarter } from "./restarts.js";

/** A request line longer than this is not HTTP a harness sends: the connection is closed. */
const MAX_REQUEST_LINE = 16 * 1024;
/** Shared-key rollouts whose records are kept (like the one-process table's bound). */
const MAX_SHARED_ROLLOUTS = 512;

interface Worker {
  index: number;
  child: ChildProcess;
  url: string;
  alive: boolean;
  /** When it began serving (Date.now()). */
  startedAt: number;
  /** Registered rollouts it serves now. */
  load: number;
  /** Its generations on the front's engine, when the proxy was given one. */
  generations?: ServedGenerations;
}

interface Registered {
  owner: Worker;
  apiKey: string;
  records: CallRecord[];
  mcp?: McpHandler;
}

export async function startProxyProcesses(options: ProxyOptions, count: number): Promise<ProxyHandle> {
  const limits = proxyLimitsOf(options.model, options.limits);
  const registered = new Map<string, Registered>();
  const shared = new Map<string, CallRecord[]>();
  const settling = new Map<number, () => void>();
  let nextSettle = 0;

  const onMessage = (msg: FromWorker, worker: Worker) => {
    if (msg.t === "generate" || msg.t === "abort") worker.generations!.ask(msg);
    else if (msg.t === "record") keep(msg.path, unpackRecord(msg.record));
    else if (msg.t === "settled") {
      settling.get(msg.id)?.();
      settling.delete(msg.id);
    }
  };
  const keep = (path: string, record: CallRecord) => {
    if (options.keepRecords !== false) {
      const r = registered.get(path);
      if (r) r.records.push(record);
      else if (options.sharedKey !== undefined) {
        let list = shared.get(path);
        if (!list) {
          shared.set(path, (list = []));
          if (shared.size > MAX_SHARED_ROLLOUTS) shared.delete(shared.keys().next().value!);
        }
        list.push(record);
      }
    }
    if (options.recordFile !== undefined) appendRecords(options.recordFile, [record]);
    options.onRecord?.(record);
  };

  // A process that dies is replaced in its place: the same index, the same share of shared-key paths.
  let closing = false;
  let mcpUrl = "";
  const restarter = createRestarter(
    (index) => startWorker(index, count, options, onMessage, onExit).then((s) => s.worker),
    (worker) => takePlace(worker),
    stopWorker,
  );
  const onExit = (worker: Worker, why: string) => {
    worker.generations?.abortAll();
    if (!closing && workers[worker.index] === worker) restarter.died(worker.index, Date.now() - worker.startedAt, why);
  };
  /** A new process in a dead one's place: every process learns its address; it learns where the registered rollouts are. */
  const takePlace = (worker: Worker) => {
    workers[worker.index] = worker;
    const urls = workers.map((w) => w.url);
    for (const w of workers) send(w, { t: "peers", urls, mcpUrl });
    for (const [path, r] of registered) if (r.owner.alive) send(worker, { t: "route", path, owner: r.owner.index });
  };

  const workers: Worker[] = [];
  const started = await Promise.allSettled(Array.from({ length: count }, (_, index) => startWorker(index, count, options, onMessage, onExit)));
  for (const s of started) if (s.status === "fulfilled") workers.push(s.value.worker);
  const failure = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failure) {
    closing = true;
    await Promise.all(workers.map(stopWorker));
    throw failure.reason;
  }
  const engineInfo = (started[0] as PromiseFulfilledResult<{ engineInfo?: EngineInfo }>).value.engineInfo;
  const send = (w: Worker, msg: ToWorker) => {
    if (w.alive) w.child.send(msg);
  };

  // MCP servers live here: a process relays `/r/<path>/mcp/<name>` to this loopback server.
  const mcpServer = createHttpServer((req, res) => void serveMcp(registered, req, res));
  await listen(mcpServer, 0, "127.0.0.1");
  mcpUrl = `http://127.0.0.1:${(mcpServer.address() as AddressInfo).port}`;
  for (const w of workers) send(w, { t: "peers", urls: workers.map((x) => x.url), mcpUrl });

  const ownerOf = (path: string | undefined): Worker => {
    if (path === undefined) return workers[0]!;
    return registered.get(path)?.owner ?? workers[ownerOfPath(path, count)]!;
  };
  const front = createServer({ pauseOnConnect: true }, (socket) =>
    handOff(socket, limits.idleTimeoutMs, (line, head) => {
      const owner = ownerOf(pathOfRequestLine(line));
      if (!owner.alive) return void socket.destroy();
      owner.child.send({ t: "conn", head } satisfies ToWorker, socket, (err) => {
        if (err) socket.destroy();
      });
    }),
  );
  try {
    await listen(front, options.port ?? 0, options.host ?? "127.0.0.1");
  } catch (err) {
    closing = true;
    await restarter.stop();
    await Promise.all(workers.map(stopWorker));
    mcpServer.close();
    throw err;
  }
  for (const w of workers) if (!w.alive) restarter.died(w.index, 0, "ended while the proxy started");
  const address = front.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  return {
    url,
    port: address.port,
    registerRollout(path, opts = {}): RolloutRegistration {
      if (opts.try !== undefined && (!Number.isInteger(opts.try) || opts.try < 1))
        throw new Error(`bug: try ${opts.try} of rollout ${path} is not an integer >= 1`);
      const previous = registered.get(path);
      if (previous) previous.owner.load--;
      const live = workers.filter((w) => w.alive);
      const owner = (live.length > 0 ? live : workers).reduce((a, b) => (b.load < a.load ? b : a));
      owner.load++;
      const apiKey = opts.apiKey ?? `reins-${randomBytes(18).toString("base64url")}`;
      const sent: RegisterOptions = { ...opts, apiKey };
      registered.set(path, { owner, apiKey, records: [] });
      shared.delete(path);
      if (previous && previous.owner !== owner) send(previous.owner, { t: "unregister", path });
      send(owner, { t: "register", path, opts: sent });
      for (const w of workers) send(w, { t: "route", path, owner: owner.index });
      return { path, rolloutId: opts.rolloutId ?? path, try: opts.try ?? 1, apiKey, baseUrl: `${url}/r/${encodeURIComponent(path)}` };
    },
    unregisterRollout(path) {
      const r = registered.get(path);
      if (!r) {
        const list = shared.get(path) ?? [];
        shared.delete(path);
        return list;
      }
      registered.delete(path);
      r.owner.load--;
      send(r.owner, { t: "unregister", path });
      for (const w of workers) send(w, { t: "unroute", path });
      return r.records;
    },
    attachMcp(path, handler) {
      const r = registered.get(path);
      if (!r) throw new Error(`bug: MCP servers attached to ${path}, which is not registered`);
      if (handler) r.mcp = handler;
      else delete r.mcp;
      send(r.owner, { t: "mcp", path, attached: handler !== undefined });
    },
    records(path) {
      if (path !== undefined) return [...(registered.get(path)?.records ?? shared.get(path) ?? [])];
      return [...[...registered.values()].flatMap((r) => r.records), ...[...shared.values()].flat()];
    },
    settle(path) {
      const owner = ownerOf(path);
      if (!owner.alive) return Promise.resolve();
      const id = nextSettle++;
      return new Promise<void>((resolve) => {
        settling.set(id, resolve);
        owner.child.once("exit", resolve);
        send(owner, { t: "settle", id, path });
      });
    },
    get processIds() {
      return workers.map((w) => w.child.pid!);
    },
    ...(engineInfo ? { engineInfo } : {}),
    async close() {
      closing = true;
      await restarter.stop();
      await new Promise<void>((resolve) => front.close(() => resolve()));
      await Promise.all(workers.map(stopWorker));
      for (const resolve of settling.values()) resolve();
      await new Promise<void>((resolve) => {
        mcpServer.close(() => resolve());
        mcpServer.closeAllConnections();
      });
    },
  };
}

/**
 * Read a connection's first request line (and whatever came with it), stop reading, and give
 * both to `route`. A connection that sends no line within the idle timeout, or a line longer than
 * any a harness sends, is closed.
 */
function handOff(socket: Socket, idleMs: number, route: (line: string, head: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const timer = setTimeout(() => socket.destroy(), idleMs);
  const onData = (chunk: Buffer) => {
    chunks.push(chunk);
    size += chunk.length;
    const head = chunks.length === 1 ? chunk : Buffer.concat(chunks);
    const eol = head.indexOf("\r\n");
    if (eol < 0) {
      if (size > MAX_REQUEST_LINE) socket.destroy();
      return;
    }
    clearTimeout(timer);
    socket.off("data", onData);
    socket.pause();
    // Stop the handle itself: a byte read here after the hand-over would be lost.
    (socket as unknown as { _handle?: { readStop?(): number } })._handle?.readStop?.();
    const rest: Buffer[] = [head];
    for (let more = socket.read() as Buffer | null; more !== null; more = socket.read() as Buffer | null) rest.push(more);
    route(head.subarray(0, eol).toString("latin1"), rest.length === 1 ? head : Buffer.concat(rest));
  };
  socket.on("data", onData);
  socket.on("error", () => socket.destroy());
  socket.on("close", () => clearTimeout(timer));
  socket.resume();
}

/** `/r/<path>/mcp/<name>` relayed by a process: the rollout's key checked again, then answered as one process answers it. */
async function serveMcp(registered: Map<string, Registered>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { path, route } = parsePath(req.method ?? "GET", req.url ?? "/");
  const r = path === undefined ? undefined : registered.get(path);
  const key = credentialOf(req);
  const allowed = r !== undefined && key !== undefined && sameKey(r.apiKey, key) ? r : undefined;
  await handleMcp(allowed, route.kind === "mcp" ? route.name : "", req, res).catch(() => {
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
}

function listen(
  server: {
    listen(port: number, host: string, cb: () => void): unknown;
    once(e: "error", cb: (err: Error) => void): unknown;
    off(e: "error", cb: (err: Error) => void): unknown;
  },
  port: number,
  host: string,
): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

const ENTRY = fileURLToPath(new URL("./worker.mjs", import.meta.url));
/**
 * A proxy process's young generation, larger than V8's default: a call's objects live as long as
 * the call (tens of ms under load), so with the default most in-flight calls' objects survive a
 * scavenge and are copied, then promoted. Measured with one process at 128 streams
 * (bench/proxy-overhead.ts --semi-space 64): later turns 0.57 → 0.68 of bare (medians of 5 runs).
 * It must be given at start (V8 sizes the heap then), so a process reins forks gets it.
 */
const YOUNG_GENERATION = "--max-semi-space-size=64";

/** Fork one proxy process and wait until it serves (or says why it cannot). */
function startWorker(
  index: number,
  count: number,
  options: ProxyOptions,
  onMessage: (msg: FromWorker, worker: Worker) => void,
  onExit: (worker: Worker, why: string) => void,
): Promise<{ worker: Worker; engineInfo?: EngineInfo }> {
  const child = fork(ENTRY, [], { execArgv: [YOUNG_GENERATION], serialization: "advanced", stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const env = options.env ?? process.env;
  const engine = options.engine;
  const probe = engine?.info?.();
  const frontEngine: RelayedEngineSpec | undefined = engine
    ? { type: engine.type, streams: engine.generateStream !== undefined, ...(probe ? { info: probe } : {}) }
    : undefined;
  const init: ToWorker = {
    t: "init",
    index,
    count,
    options: {
      model: options.model,
      ...(options.sharedKey !== undefined ? { sharedKey: options.sharedKey } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
      env: { ...env },
      ...(frontEngine ? { frontEngine } : {}),
    },
  };
  return new Promise((resolve, reject) => {
    const first = (msg: FromWorker) => {
      if (msg.t === "hello") child.send(init);
      else if (msg.t === "ready") {
        child.off("message", first);
        child.off("exit", early);
        const worker: Worker = { index, child, url: msg.url, alive: true, startedAt: Date.now(), load: 0 };
        if (engine) worker.generations = serveGenerations(engine, (reply) => worker.alive && child.send(reply));
        child.on("message", (m: FromWorker) => onMessage(m, worker));
        child.on("exit", (code, signal) => {
          worker.alive = false;
          if (!stopping.has(child)) onExit(worker, String(signal ?? code));
        });
        resolve({ worker, ...(msg.engineInfo ? { engineInfo: msg.engineInfo } : {}) });
      } else if (msg.t === "failed") {
        child.off("exit", early);
        stopping.add(child);
        child.kill("SIGKILL");
        reject(msg.code ? new ReinsError(msg.code as Code, msg.message, msg.hint) : new Error(msg.message));
      }
    };
    const early = (code: number | null, signal: string | null) => reject(new Error(`reins proxy: process ${index} ended before serving (${signal ?? code})`));
    child.on("message", first);
    child.once("exit", early);
  });
}

const stopping = new WeakSet<ChildProcess>();

/** Ask a process to close (it finishes its open answers), then kill it if it has not ended within 5 s. */
function stopWorker(w: Worker): Promise<void> {
  stopping.add(w.child);
  if (!w.alive || w.child.exitCode !== null || w.child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => w.child.kill("SIGKILL"), 5000);
    w.child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    w.child.send({ t: "close" } satisfies ToWorker);
  });
}
