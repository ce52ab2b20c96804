/**
 * Admission of sandbox creations on a cluster: a place among the sandboxes STARTING (the cap,
 * starting-gate.ts), then a token from the creation-rate limiter (token-bucket.ts), in that order, so a
 * token is spent only by a create about to happen. Both are separate from the executor's
 * concurrency (rollouts in flight). The clock is injected; without limits admission is immediate.
 */
import { StartingGate } from "./starting-gate.js";
import { TokenBucket } from "./token-bucket.js";

export interface AdmissionLimits {
  /** Sandboxes created but not yet ready, at most; absent: no cap. */
  maxStarting?: number;
  /** Creations per second; absent: no limit. */
  createsPerSecond?: number;
  /** Creations that may happen at once after a quiet spell (default: createsPerSecond rounded up). */
  createBurst?: number;
}

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const SYSTEM_CLOCK: Clock = { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) };

/** A sandbox admitted to start: `started()` once it is ready or has failed (idempotent). */
export interface Admitted {
  started(): void;
  /** Milliseconds spent waiting for a place and a token. */
  waitedMs: number;
}

export class Admission {
  private readonly gate?: StartingGate;
  private readonly bucket?: TokenBucket;

  constructor(
    readonly limits: AdmissionLimits = {},
    private readonly clock: Clock = SYSTEM_CLOCK,
  ) {
    if (limits.maxStarting !== undefined) this.gate = new StartingGate(limits.maxStarting);
    if (limits.createsPerSecond !== undefined)
      this.bucket = new TokenBucket(limits.createsPerSecond, limits.createBurst ?? Math.max(1, Math.ceil(limits.createsPerSecond)), clock.now());
  }

  /** Sandboxes starting now (0 without a cap). */
  get starting(): number {
    return this.gate?.starting ?? 0;
  }

  /** The most sandboxes that were starting at once (0 without a cap). */
  get peakStarting(): number {
    return this.gate?.peak ?? 0;
  }

  async admit(): Promise<Admitted> {
    const t0 = this.clock.now();
    const leave = this.gate ? await this.gate.enter() : () => undefined;
    if (this.bucket) {
      const wait = this.bucket.take(this.clock.now());
      if (wait > 0) await this.clock.sleep(wait);
    }
    return { started: leave, waitedMs: this.clock.now() - t0 };
  }
}
