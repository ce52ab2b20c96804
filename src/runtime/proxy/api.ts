/**
 * The proxy's programmatic surface, used by the executor, the CLI (`reins proxy`) and tests.
 * Implemented in ./server.ts as `startProxy(options)`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ResolvedCallClassRule, ResolvedModel } from "../../compiler/contract/plan.js";
import type { Engine, EngineInfo } from "../engines/engine.js";
import type { CallRecord } from "../records/index.js";
import type { ProxyLimits } from "./limits.js";

export interface ProxyOptions {
  model: ResolvedModel;
  /** Engine instance; when absent, built from model.engine through the engine registry. */
  engine?: Engine;
  host?: string; // default 127.0.0.1
  port?: number; // default 0 (ephemeral)
  /**
   * When set, any rollout id on the path is accepted with this key (the `reins proxy` mode).
   * Otherwise only rollouts registered with `registerRollout` are served.
   */
  sharedKey?: string;
  /** Called once per recorded call, after the response finished. */
  onRecord?: (record: CallRecord) => void;
  /** Append every call record to this file as it is recorded (`reins proxy --record FILE`). */
  recordFile?: string;
  /** Keep records in memory for `records()` (default true; `reins proxy` streams them to a file instead). */
  keepRecords?: boolean;
  /** Per-request limits and timeouts; each unset one has its default (./limits.ts). */
  limits?: Partial<ProxyLimits>;
  /** Where a hosted policy's key variable is read (default process.env); read per call, never stored. */
  env?: NodeJS.ProcessEnv;
  /**
   * Proxy processes behind the one port (default: the model's `proxy.processes`, else 1). Each
   * rollout is served by one of them, so its token state stays in one place; with more than one,
   * `engine` cannot be given (each process builds its own from the model's engine).
   */
  processes?: number;
}

/** Who a registered path serves: the identity every record of its calls carries. */
export interface RolloutIdentity {
  /** The plan's rollout id (default: the path). */
  rolloutId?: string;
  /** The rollout's infrastructure try, 1-based (default 1). */
  try?: number;
  /** The rollout's harness, told to the engine (a scripted policy may answer each harness its own turns). */
  harness?: string;
}

/** Serves one HTTP request to the rollout's MCP server `name`; false when it has none of that name. */
export type McpHandler = (name: string, req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

export interface RolloutRegistration {
  /** The URL path segment and the key of `records` / `unregisterRollout`: one per try. */
  path: string;
  rolloutId: string;
  try: number;
  apiKey: string;
  /** e.g. http://127.0.0.1:PORT/r/<path> (a harness appends /v1/...) */
  baseUrl: string;
}

export interface ProxyHandle {
  /** http://host:port */
  url: string;
  port: number;
  /**
   * Serve `/r/<path>/…` with its own credential. The path is opaque to the proxy (the executor
   * uses one per try); the records of its calls carry `rolloutId` and `try` from `opts`.
   */
  registerRollout(
    path: string,
    opts?: RolloutIdentity & { apiKey?: string; callClasses?: ResolvedCallClassRule[]; weightsVersion?: string },
  ): RolloutRegistration;
  /** Stop serving a path (later requests get 401); returns its records. */
  unregisterRollout(path: string): CallRecord[];
  /** Routes `/r/<path>/mcp/<name>` of a registered rollout to its MCP servers (undefined: none). */
  attachMcp(path: string, handler: McpHandler | undefined): void;
  /** The records of one path, or of all. */
  records(path?: string): CallRecord[];
  /**
   * Resolves once every record of the path handed over so far is in `records` (with several
   * processes records travel from the one that served the call; alone, at once).
   */
  settle(path: string): Promise<void>;
  /** The process ids of the proxy's processes, when it runs several. */
  readonly processIds?: readonly number[];
  /** The engine's capability probe, for engines behind a probed server (vllm, sglang, llama-cpp). */
  readonly engineInfo?: EngineInfo;
  close(): Promise<void>;
}
