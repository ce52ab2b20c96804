/**
 * The proxy's programmatic surface, used by the executor, the CLI (`reins proxy`) and tests.
 * Implemented in ./server.ts as `startProxy(options)`.
 */
import type { ResolvedCallClassRule, ResolvedModel } from "../../compiler/contract/plan.js";
import type { Engine } from "../engines/engine.js";
import type { CallRecord } from "../records/call-record.js";

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
  /** Keep records in memory for `records()` (default true; `reins proxy` streams them to a file instead). */
  keepRecords?: boolean;
}

export interface RolloutRegistration {
  rolloutId: string;
  apiKey: string;
  /** e.g. http://127.0.0.1:PORT/r/<rolloutId> (a harness appends /v1/...) */
  baseUrl: string;
}

export interface ProxyHandle {
  /** http://host:port */
  url: string;
  port: number;
  registerRollout(
    rolloutId: string,
    opts?: { apiKey?: string; callClasses?: ResolvedCallClassRule[]; weightsVersion?: string },
  ): RolloutRegistration;
  /** Stop serving a rollout (later requests get 401); returns its records. */
  unregisterRollout(rolloutId: string): CallRecord[];
  records(rolloutId?: string): CallRecord[];
  close(): Promise<void>;
}
