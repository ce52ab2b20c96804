/**
 * Rollouts the proxy serves, by URL path: credential, identity, call classes, call counter, prompt
 * state, records. A path is registered explicitly (executor: one per try of a plan rollout) or, in
 * shared-key mode (`reins proxy`), created on its first authenticated call (then the path is the
 * rollout id and the try is 1).
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { ResolvedCallClassRule } from "../../compiler/contract/plan.js";
import type { CallRecord } from "../records/index.js";
import type { McpHandler, RolloutIdentity } from "./api.js";
import { RolloutPromptState } from "./render.js";
import { SegmentCache } from "./segment-cache.js";

export interface Rollout {
  /** The URL path segment (`/r/<path>/v1/...`); opaque, and the seed of response and tool-call ids. */
  path: string;
  /** The plan's rollout id and try: stamped on every record. */
  rolloutId: string;
  try: number;
  harness?: string;
  /** The try's MCP servers, once started (`/r/<path>/mcp/<name>`). */
  mcp?: McpHandler;
  apiKey: string;
  callClasses: ResolvedCallClassRule[];
  weightsVersion?: string;
  nextSeq: number;
  prompts: RolloutPromptState;
  records: CallRecord[];
  /** Requests of this rollout open now (capped by maxRequestsPerRollout). */
  open: number;
  /** The rollout's CPU turns (./call-request.ts): its heavy steps run one at a time. */
  turns: Promise<void>;
  /** Steps queued or running in `turns`. */
  pendingTurns: number;
}

/**
 * Run a rollout's CPU-heavy step (decompress, JSON.parse, render plan) after its earlier ones: one
 * rollout's many concurrent requests never run back to back, each waits for a fresh event-loop
 * turn, so the calls of other rollouts are served between them. A `light` step (a small body) of
 * a rollout with no step pending, the usual case, runs at once.
 */
export function inTurn<T>(rollout: Rollout, work: () => T, light = false): Promise<T> {
  if (light && rollout.pendingTurns === 0) {
    rollout.pendingTurns++;
    try {
      return Promise.resolve(work());
    } catch (err) {
      return Promise.reject(err);
    } finally {
      rollout.pendingTurns--;
    }
  }
  return queueTurn(rollout, work);
}

function queueTurn<T>(rollout: Rollout, work: () => T): Promise<T> {
  rollout.pendingTurns++;
  const run = rollout.turns.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(work);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  rollout.turns = settled;
  void settled.then(() => rollout.pendingTurns--);
  return run;
}

/** Shared-key rollouts kept in memory at most; the oldest is forgotten first. */
const MAX_SHARED_ROLLOUTS = 512;

export class RolloutTable {
  private readonly rollouts = new Map<string, Rollout>();
  private readonly shared = new Map<string, Rollout>();
  private readonly cache = new SegmentCache();

  constructor(private readonly sharedKey?: string) {}

  register(path: string, opts: RolloutIdentity & { apiKey?: string; callClasses?: ResolvedCallClassRule[]; weightsVersion?: string } = {}): Rollout {
    if (opts.try !== undefined && (!Number.isInteger(opts.try) || opts.try < 1))
      throw new Error(`bug: try ${opts.try} of rollout ${path} is not an integer >= 1`);
    if (opts.rolloutId === "") throw new Error(`bug: empty rollout id registered for ${path}`);
    const rollout = this.create(path, opts.apiKey ?? `reins-${randomBytes(18).toString("base64url")}`, opts);
    if (opts.callClasses) rollout.callClasses = opts.callClasses;
    if (opts.weightsVersion !== undefined) rollout.weightsVersion = opts.weightsVersion;
    this.rollouts.set(path, rollout);
    this.shared.delete(path);
    return rollout;
  }

  attachMcp(path: string, handler: McpHandler | undefined): void {
    const r = this.rollouts.get(path);
    if (!r) throw new Error(`bug: MCP servers attached to ${path}, which is not registered`);
    if (handler) r.mcp = handler;
    else delete r.mcp;
  }

  unregister(path: string): CallRecord[] {
    const r = this.rollouts.get(path) ?? this.shared.get(path);
    this.rollouts.delete(path);
    this.shared.delete(path);
    return r?.records ?? [];
  }

  /** The rollout this credential may use, or undefined (→ 401). */
  authorize(path: string, key: string | undefined): Rollout | undefined {
    if (key === undefined) return undefined;
    const registered = this.rollouts.get(path);
    if (registered) return sameKey(registered.apiKey, key) ? registered : undefined;
    if (this.sharedKey === undefined || !sameKey(this.sharedKey, key)) return undefined;
    let r = this.shared.get(path);
    if (!r) {
      r = this.create(path, this.sharedKey, {});
      this.shared.set(path, r);
      if (this.shared.size > MAX_SHARED_ROLLOUTS) {
        const oldest = this.shared.keys().next().value;
        if (oldest !== undefined) this.shared.delete(oldest);
      }
    }
    return r;
  }

  records(path?: string): CallRecord[] {
    if (path !== undefined) return [...((this.rollouts.get(path) ?? this.shared.get(path))?.records ?? [])];
    const all: CallRecord[] = [];
    for (const r of this.rollouts.values()) all.push(...r.records);
    for (const r of this.shared.values()) all.push(...r.records);
    return all;
  }

  private create(path: string, apiKey: string, identity: RolloutIdentity): Rollout {
    return {
      path,
      rolloutId: identity.rolloutId ?? path,
      try: identity.try ?? 1,
      ...(identity.harness !== undefined ? { harness: identity.harness } : {}),
      apiKey,
      callClasses: [],
      nextSeq: 0,
      prompts: new RolloutPromptState(this.cache),
      records: [],
      open: 0,
      turns: Promise.resolve(),
      pendingTurns: 0,
    };
  }
}

/** Constant-time comparison of a rollout's key with the one a request carries. */
export function sameKey(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The key a request carries: `x-api-key`, or `Authorization: Bearer <key>`. */
export function credentialOf(req: IncomingMessage): string | undefined {
  const key = req.headers["x-api-key"];
  if (typeof key === "string" && key.length > 0) return key;
  const auth = req.headers.authorization;
  if (typeof auth === "string") {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (m) return m[1]!.trim();
  }
  return undefined;
}
