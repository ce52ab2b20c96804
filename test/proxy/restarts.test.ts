/** When a dead proxy process is started again (processes/restarts.ts): soon, then backing off, then never. */
import { describe, expect, it } from "vitest";
import { createRestarter, MAX_QUICK_DEATHS, QUICK_DEATH_MS, quickDeathsAfter, restartDelayMs } from "../../src/runtime/proxy/processes/restarts.js";

describe("restart policy", () => {
  it("waits 250 ms, doubling per quick death up to 8 s, and gives up after 5 quick deaths in a row", () => {
    let deaths = 0;
    const delays: (number | undefined)[] = [];
    for (let i = 0; i < MAX_QUICK_DEATHS + 1; i++) delays.push(restartDelayMs((deaths = quickDeathsAfter(deaths, 1_000))));
    expect(delays).toEqual([250, 500, 1000, 2000, 4000, undefined]);
    // a process that lived long counts as a first death again
    expect(quickDeathsAfter(4, QUICK_DEATH_MS + 1)).toBe(1);
    expect(restartDelayMs(30)).toBeUndefined();
  });

  it("starts a process in the dead one's place; a start that fails counts as a death; stop() ends what comes up later", async () => {
    const placed: string[] = [];
    const ended: string[] = [];
    let attempts = 0;
    const restarter = createRestarter(
      async (index) => {
        if (++attempts === 1) throw new Error("no model");
        return `worker-${index}-${attempts}`;
      },
      (w) => void placed.push(w),
      async (w) => void ended.push(w),
    );
    await quietly(async () => {
      restarter.died(1, 100, "SIGKILL");
      const t0 = Date.now();
      while (placed.length === 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 20));
      // the first start failed (250 ms), the second came 500 ms later
      expect(placed).toEqual(["worker-1-2"]);
      restarter.died(1, 100, "SIGKILL");
      await restarter.stop();
      await new Promise((r) => setTimeout(r, 1200));
      expect(placed).toEqual(["worker-1-2"]);
      expect(attempts).toBe(2);
      expect(ended).toEqual([]);
    });
  });

  it("a process still starting when the proxy closes is ended, not put in place", async () => {
    const placed: string[] = [];
    const ended: string[] = [];
    let starting = false;
    const restarter = createRestarter(
      async (index) => {
        starting = true;
        await new Promise((r) => setTimeout(r, 300));
        return `worker-${index}`;
      },
      (w) => void placed.push(w),
      async (w) => void ended.push(w),
    );
    await quietly(async () => {
      restarter.died(0, 100, "exit 1");
      while (!starting) await new Promise((r) => setTimeout(r, 10));
      await restarter.stop();
      expect(ended).toEqual(["worker-0"]);
      expect(placed).toEqual([]);
    });
  });
});

/** Run `work` without the restart warnings on stderr. */
async function quietly(work: () => Promise<void>): Promise<void> {
  const emit = process.emitWarning;
  process.emitWarning = () => undefined;
  try {
    await work();
  } finally {
    process.emitWarning = emit;
  }
}
