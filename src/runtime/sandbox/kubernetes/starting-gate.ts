/**
 * The cap on sandboxes STARTING at once (created, not yet ready), apart from how many rollouts run
 * at once: a sandbox enters before its create and leaves once it is ready (or failed), so a burst
 * of rollouts never has more than `max` pods or claims in the startup pipeline (uni-agent's
 * MODAL_MAX_STARTING). Pure: no clock; waiters enter in the order they came (FIFO).
 */
export class StartingGate {
  private inside = 0;
  private peakValue = 0;
  private readonly queue: (() => void)[] = [];

  constructor(readonly max: number) {
    if (!(max >= 1)) throw new RangeError(`a starting cap needs max ≥ 1 (got ${max})`);
  }

  /** Sandboxes starting now. */
  get starting(): number {
    return this.inside;
  }

  /** Callers waiting for a place. */
  get waiting(): number {
    return this.queue.length;
  }

  /** The most that were ever starting at once. */
  get peak(): number {
    return this.peakValue;
  }

  /** Resolves, once fewer than `max` are starting, with the function that leaves (idempotent). */
  enter(): Promise<() => void> {
    return new Promise((resolve) => {
      const admit = () => {
        this.inside++;
        this.peakValue = Math.max(this.peakValue, this.inside);
        let left = false;
        resolve(() => {
          if (left) return;
          left = true;
          this.inside--;
          this.queue.shift()?.();
        });
      };
      if (this.inside < this.max && this.queue.length === 0) admit();
      else this.queue.push(admit);
    });
  }
}
