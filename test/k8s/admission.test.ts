/**
 * Admission of sandbox creations (pure, clock-injected): the token bucket spaces creations at its
 * rate after a burst, in the order they were asked for; the STARTING cap admits at most `max` at once,
 * first come first served; together a place is taken before a token. And the claim's state as its
 * status says it; a sandbox's lifetime as the sum of its stage deadlines.
 */
import { describe, expect, it } from "vitest";
import { Admission, type Clock } from "../../src/runtime/sandbox/kubernetes/admission.js";
import { claimState } from "../../src/runtime/sandbox/kubernetes/claim-status.js";
import { lifetimeSeconds, shutdownTime } from "../../src/runtime/sandbox/kubernetes/lifetime.js";
import { StartingGate } from "../../src/runtime/sandbox/kubernetes/starting-gate.js";
import { TokenBucket } from "../../src/runtime/sandbox/kubernetes/token-bucket.js";

/** A clock that moves only when a sleeper is woken: sleep(ms) advances it to that time. */
function fakeClock(): Clock & { slept: number[] } {
  let t = 1_000_000;
  const slept: number[] = [];
  return {
    slept,
    now: () => t,
    sleep: async (ms) => {
      slept.push(ms);
      t += ms;
    },
  };
}

describe("the creation-rate limiter (token bucket)", () => {
  it("lets a burst through at once, then one creation per 1/rate, in the order asked", () => {
    const b = new TokenBucket(5, 3, 0);
    expect([b.take(0), b.take(0), b.take(0)]).toEqual([0, 0, 0]);
    // Tokens go negative: the 4th, 5th, 6th callers are due 200, 400, 600 ms from now.
    expect([b.take(0), b.take(0), b.take(0)]).toEqual([200, 400, 600]);
    // In 1 s, 5 tokens came: the debt of 3 is paid and 2 are left.
    expect(b.take(1000)).toBe(0);
    expect(b.take(1000)).toBe(0);
    expect(b.take(1000)).toBe(200);
  });

  it("saves up at most `burst` tokens, however long it was quiet", () => {
    const b = new TokenBucket(2, 2, 0);
    b.take(0);
    b.take(0);
    const after = [b.take(3_600_000), b.take(3_600_000), b.take(3_600_000)];
    expect(after).toEqual([0, 0, 500]);
  });

  it("sustains its rate: 100 creations at 10/s with a burst of 10 take 9 s", () => {
    const b = new TokenBucket(10, 10, 0);
    const due = Array.from({ length: 100 }, () => b.take(0));
    expect(due.filter((d) => d === 0)).toHaveLength(10);
    expect(Math.max(...due)).toBe(9000);
    // Strictly increasing after the burst: no two creations at the same moment.
    const later = due.slice(10);
    expect(later.every((d, i) => i === 0 || d > later[i - 1]!)).toBe(true);
  });

  it("refuses a rate or burst that cannot work", () => {
    expect(() => new TokenBucket(0, 1, 0)).toThrow(RangeError);
    expect(() => new TokenBucket(1, 0, 0)).toThrow(RangeError);
  });
});

describe("the STARTING cap", () => {
  it("never has more than `max` inside, and admits waiters first come first served", async () => {
    const gate = new StartingGate(2);
    const tick = () => new Promise((r) => setImmediate(r));
    let inside = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const leave = await gate.enter();
        order.push(i);
        most = Math.max(most, ++inside);
        await tick();
        inside--;
        leave();
      }),
    );
    expect(most).toBe(2);
    expect(gate.peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(gate.starting).toBe(0);
  });

  it("a place left twice is freed once", async () => {
    const gate = new StartingGate(1);
    const leave = await gate.enter();
    const second = gate.enter();
    const third = gate.enter();
    leave();
    leave();
    await second;
    expect(gate.starting).toBe(1);
    expect(gate.waiting).toBe(1);
    void third;
  });
});

describe("admission: a place among those starting, then a creation token", () => {
  it("paces creations by the bucket and caps those starting, on an injected clock", async () => {
    const clock = fakeClock();
    const admission = new Admission({ maxStarting: 3, createsPerSecond: 10, createBurst: 2 }, clock);
    const t0 = clock.now();
    const admitted = [];
    for (let i = 0; i < 3; i++) admitted.push(await admission.admit());
    // Two from the burst at once, the third 100 ms later.
    expect(clock.slept).toEqual([100]);
    expect(clock.now() - t0).toBe(100);
    expect(admission.starting).toBe(3);
    // A fourth waits for a place: none is taken until one of the three is ready.
    let fourth = false;
    const pending = admission.admit().then((a) => {
      fourth = true;
      return a;
    });
    await new Promise((r) => setImmediate(r));
    expect(fourth).toBe(false);
    admitted[0]!.started();
    const a4 = await pending;
    expect(fourth).toBe(true);
    expect(admission.starting).toBe(3);
    expect(admission.peakStarting).toBe(3);
    for (const a of [...admitted, a4]) a.started();
    expect(admission.starting).toBe(0);
  });

  it("without limits admits at once", async () => {
    const clock = fakeClock();
    const admission = new Admission({}, clock);
    await Promise.all(Array.from({ length: 1000 }, () => admission.admit()));
    expect(clock.slept).toEqual([]);
  });
});

describe("a SandboxClaim's state", () => {
  it("pending without status or while starting; ready with a sandbox; ended for good reasons only", () => {
    expect(claimState({})).toEqual({ phase: "pending" });
    expect(claimState({ status: { conditions: [{ type: "Ready", status: "False", reason: "SandboxPending" }] } })).toEqual({ phase: "pending" });
    expect(claimState({ status: { conditions: [{ type: "Ready", status: "True" }], sandbox: { name: "p-1", podIPs: ["10.0.0.1"] } } })).toEqual({
      phase: "ready",
      sandbox: "p-1",
      podIPs: ["10.0.0.1"],
    });
    // Ready without a sandbox name is not usable yet.
    expect(claimState({ status: { conditions: [{ type: "Ready", status: "True" }] } })).toEqual({ phase: "pending" });
    expect(claimState({ status: { conditions: [{ type: "Ready", status: "False", reason: "SandboxPodGone", message: "evicted" }] } })).toEqual({
      phase: "ended",
      reason: "SandboxPodGone",
      message: "evicted",
    });
    expect(claimState({ metadata: { deletionTimestamp: "2026-01-01T00:00:00Z" } }).phase).toBe("ended");
  });
});

describe("a claimed sandbox's lifetime", () => {
  it("is the sum of its stage deadlines, as an RFC 3339 shutdown time", () => {
    const seconds = lifetimeSeconds({ startSeconds: 300, runSeconds: 600, finishSeconds: 600.2 });
    expect(seconds).toBe(1501);
    expect(shutdownTime(new Date("2026-11-29T08:00:00.123Z"), seconds)).toBe("2026-11-29T08:25:01Z");
  });
});
