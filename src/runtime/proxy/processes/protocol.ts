/**
 * What the proxy's front (./front.ts) and its processes (./worker-main.ts) tell each other over
 * the IPC channel, and the two pure rules both sides share: which process owns a rollout path
 * nobody registered (shared-key mode), and which path a connection's first request line names.
 */
import type { EngineInfo } from "../../engines/engine.js";
import type { CallRecord } from "../../records/index.js";
import type { ProxyOptions, RolloutIdentity } from "../api.js";
import { parsePath } from "../routes.js";
import type { EngineAsk, EngineReply, RelayedEngineSpec } from "./relayed-engine.js";
import type { ResolvedCallClassRule } from "../../../compiler/contract/plan.js";

/** The options a process can be given: data only (an engine instance, callbacks and files stay with the front). */
export type WorkerOptions = Pick<ProxyOptions, "model" | "sharedKey" | "limits"> & {
  env: Record<string, string | undefined>;
  /** The proxy was given an engine instance: it stays in the front and serves every process (./relayed-engine.ts). */
  frontEngine?: RelayedEngineSpec;
};

export type RegisterOptions = RolloutIdentity & { apiKey: string; callClasses?: ResolvedCallClassRule[]; weightsVersion?: string };

export type ToWorker =
  | { t: "init"; index: number; count: number; options: WorkerOptions }
  | { t: "peers"; urls: string[]; mcpUrl: string }
  | { t: "register"; path: string; opts: RegisterOptions }
  | { t: "unregister"; path: string }
  | { t: "route"; path: string; owner: number }
  | { t: "unroute"; path: string }
  | { t: "mcp"; path: string; attached: boolean }
  | { t: "settle"; id: number; path: string }
  /** A client connection, with the bytes the front read from it (sent with the socket's handle). */
  | { t: "conn"; head: Uint8Array }
  | { t: "close" }
  | EngineReply;

export type FromWorker =
  | { t: "hello" }
  | { t: "ready"; url: string; engineInfo?: EngineInfo }
  | { t: "failed"; message: string; code?: string; hint?: string }
  | { t: "record"; path: string; record: PackedRecord }
  | { t: "settled"; id: number }
  | EngineAsk;

/** The process that serves a path nobody registered: the same on every side (FNV-1a of the path). */
export function ownerOfPath(path: string, count: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) h = Math.imul(h ^ path.charCodeAt(i), 0x01000193);
  return (h >>> 0) % count;
}

/** The rollout path of an HTTP request line (`POST /r/<path>/v1/... HTTP/1.1`), as the proxy reads it; undefined when it names none. */
export function pathOfRequestLine(line: string): string | undefined {
  const parts = line.split(" ");
  if (parts.length !== 3) return undefined;
  return parsePath(parts[0]!, parts[1]!).path;
}

/** A record on its way to the front: its token ids and logprobs as typed arrays, which travel as bytes. */
export type PackedRecord = Omit<CallRecord, "promptIds" | "completionIds" | "completionLogprobs"> & {
  promptIds: Int32Array;
  completionIds: Int32Array;
  completionLogprobs: Float64Array;
};

export function packRecord(r: CallRecord): PackedRecord {
  return {
    ...r,
    promptIds: Int32Array.from(r.promptIds),
    completionIds: Int32Array.from(r.completionIds),
    completionLogprobs: Float64Array.from(r.completionLogprobs),
  };
}

export function unpackRecord(r: PackedRecord): CallRecord {
  return { ...r, promptIds: Array.from(r.promptIds), completionIds: Array.from(r.completionIds), completionLogprobs: Array.from(r.completionLogprobs) };
}
