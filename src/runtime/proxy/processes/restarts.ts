/**
 * When a proxy process that died is started again. Its rollouts are lost either way (their token
 * state and connections were in it; their tries fail and are retried on registration elsewhere),
 * but its place is not: paths of shared-key mode hash to it, and the proxy's capacity counts it.
 * The first restart comes soon; each death soon after a start doubles the wait, and a process
 * that cannot stay up (MAX_QUICK_DEATHS deaths in a row within QUICK_DEATH_MS of starting) is
 * left down, with a warning, instead of being started forever.
 */
export const FIRST_RESTART_MS = 250;
export const MAX_RESTART_MS = 8_000;
/** A process that lived less than this died "soon": the next wait doubles. */
export const QUICK_DEATH_MS = 30_000;
export const MAX_QUICK_DEATHS = 5;

/** Deaths in a row, each soon after its start, of the process in one place. */
export function quickDeathsAfter(previous: number, livedMs: number): number {
  return livedMs < QUICK_DEATH_MS ? previous + 1 : 1;
}

/** How long to wait before starting the process again, or undefined: leave it down. */
export function restartDelayMs(quickDeaths: number): number | undefined {
  if (quickDeaths > MAX_QUICK_DEATHS) return undefined;
  return Math.min(MAX_RESTART_MS, FIRST_RESTART_MS * 2 ** Math.max(0, quickDeaths - 1));
}

export interface Restarter {
  /** The process in place `index` died after living `livedMs`: another is started there, after the wait. */
  died(index: number, livedMs: number, why: string): void;
  /** No more restarts; resolves once those starting now have ended again. */
  stop(): Promise<void>;
}

/**
 * Restarts by place: `start` makes a process for a place, `takePlace` puts it there, `end` ends
 * one that came up after `stop`. A process that cannot start counts as one more quick death.
 */
export function createRestarter<W>(start: (index: number) => Promise<W>, takePlace: (worker: W) => void, end: (worker: W) => Promise<void>): Restarter {
  let stopped = false;
  const quickDeaths = new Map<number, number>();
  const timers = new Set<NodeJS.Timeout>();
  const starting = new Set<Promise<void>>();
  const died = (index: number, livedMs: number, why: string): void => {
    if (stopped) return;
    const deaths = quickDeathsAfter(quickDeaths.get(index) ?? 0, livedMs);
    quickDeaths.set(index, deaths);
    const delay = restartDelayMs(deaths);
    if (delay === undefined) {
      process.emitWarning(
        `reins proxy: process ${index} ended (${why}) ${deaths} times in a row soon after starting; it is not started again — the other processes serve new rollouts`,
      );
      return;
    }
    process.emitWarning(
      `reins proxy: process ${index} ended (${why}); the rollouts it served lose their connections; a new process takes its place in ${delay} ms`,
    );
    const timer = setTimeout(() => {
      timers.delete(timer);
      const startedAt = Date.now();
      const done = start(index).then(
        (worker) => (stopped ? end(worker) : takePlace(worker)),
        (err: Error) => died(index, Date.now() - startedAt, `could not start: ${err.message}`),
      );
      starting.add(done);
      void done.finally(() => starting.delete(done));
    }, delay);
    timers.add(timer);
  };
  return {
    died,
    async stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      await Promise.all(starting);
    },
  };
}
