/**
 * A token bucket for sandbox creations (pure; the clock is the caller's): `ratePerSecond` tokens
 * a second, at most `burst` saved up. A take always succeeds and says how long to wait before
 * acting on it: the bucket may go negative, so callers that take in turn are spaced 1/rate apart
 * in that order (no caller starves, none polls). Starting full: the first `burst` takes are due at once.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    readonly ratePerSecond: number,
    readonly burst: number,
    now: number,
  ) {
    if (!(ratePerSecond > 0) || !(burst >= 1)) throw new RangeError(`a token bucket needs rate > 0 and burst ≥ 1 (got ${ratePerSecond}, ${burst})`);
    this.tokens = burst;
    this.at = now;
  }

  /** Takes one token at `now` (ms); returns the milliseconds until it is due (0: now). */
  take(now: number): number {
    const elapsed = Math.max(0, now - this.at);
    this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.ratePerSecond) / 1000);
    this.at = Math.max(this.at, now);
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.ratePerSecond);
  }
}
