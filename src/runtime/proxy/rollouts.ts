/**
 * Rollouts the proxy serves: credential, call classes, call counter, prompt state, records.
 * A rollout is registered explicitly (executor) or, in shared-key mode (`reins proxy`), created on
 * its first authenticated call.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { ResolvedCallClassRule } from "../../compiler/contract/plan.js";
import type { CallRecord } from "../records/call-record.js";
import { RolloutPromptState } from "./render.js";
import { SegmentCache } from "./segment-cache.js";

export interface Rollout {
  id: string;
  apiKey: string;
  callClasses: ResolvedCallClassRule[];
  weightsVersion?: string;
  nextSeq: number;
  prompts: RolloutPromptState;
  records: CallRecord[];
}

/** Shared-key rollouts kept in memory at most; the oldest is forgotten first. */
const MAX_SHARED_ROLLOUTS = 512;

export class RolloutTable {
  private readonly rollouts = new Map<string, Rollout>();
  private readonly shared = new Map<string, Rollout>();
  private readonly cache = new SegmentCache();

  constructor(private readonly sharedKey?: string) {}

  register(id: string, opts: { apiKey?: string; callClasses?: ResolvedCallClassRule[]; weightsVersion?: string } = {}): Rollout {
    const rollout: Rollout = {
      id,
      apiKey: opts.apiKey ?? `reins-${randomBytes(18).toString("base64url")}`,
      callClasses: opts.callClasses ?? [],
      nextSeq: 0,
      prompts: new RolloutPromptState(this.cache),
      records: [],
      ...(opts.weightsVersion !== undefined ? { weightsVersion: opts.weightsVersion } : {}),
    };
    this.rollouts.set(id, rollout);
    this.shared.delete(id);
    return rollout;
  }

  unregister(id: string): CallRecord[] {
    const r = this.rollouts.get(id) ?? this.shared.get(id);
    this.rollouts.delete(id);
    this.shared.delete(id);
    return r?.records ?? [];
  }

  /** The rollout this credential may use, or undefined (→ 401). */
  authorize(id: string, key: string | undefined): Rollout | undefined {
    if (key === undefined) return undefined;
    const registered = this.rollouts.get(id);
    if (registered) return sameKey(registered.apiKey, key) ? registered : undefined;
    if (this.sharedKey === undefined || !sameKey(this.sharedKey, key)) return undefined;
    let r = this.shared.get(id);
    if (!r) {
      r = { id, apiKey: this.sharedKey, callClasses: [], nextSeq: 0, prompts: new RolloutPromptState(this.cache), records: [] };
      this.shared.set(id, r);
      if (this.shared.size > MAX_SHARED_ROLLOUTS) {
        const oldest = this.shared.keys().next().value;
        if (oldest !== undefined) this.shared.delete(oldest);
      }
    }
    return r;
  }

  records(id?: string): CallRecord[] {
    if (id !== undefined) return [...(this.rollouts.get(id) ?? this.shared.get(id))?.records ?? []];
    const all: CallRecord[] = [];
    for (const r of this.rollouts.values()) all.push(...r.records);
    for (const r of this.shared.values()) all.push(...r.records);
    return all;
  }
}

function sameKey(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
