/**
 * `reins view` over multi-seed run directories, through real HTTP on loopback: /api/runs says
 * which runs have seeds; /api/seeds answers each seed's held-out numbers from its own summary.json,
 * the spread over the finished seeds and the pending ones, and for two recipes the difference of
 * their mean gains with Welch's interval.
 */
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startViewServer, type ViewHandle } from "../../src/runtime/index.js";
import { compareGains } from "../../src/runtime/control/seed-summary.js";
import { studentTQuantile } from "../../src/runtime/control/student-t.js";
import { tempDir } from "../temp.js";
import { writeSeedsFixture, type Fixture } from "./run-fixture.js";

function get(port: number, path: string): Promise<any> {
  return new Promise((resolve, reject) => {
    request({ host: "127.0.0.1", port, path }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve(JSON.parse(body)));
    })
      .on("error", reject)
      .end();
  });
}

const gainOf = (f: Fixture) => f.summary.heldOut.after - f.summary.heldOut.before;

describe("reins view: multi-seed run directories", () => {
  let a: Fixture[];
  let b: Fixture[];
  let one: ViewHandle;
  let two: ViewHandle;
  const dirA = join(tempDir("reins-view-seeds-"), "recipe-a");
  const dirB = join(tempDir("reins-view-seeds-"), "recipe-b");

  beforeAll(async () => {
    a = writeSeedsFixture(dirA, [1, 2, 3, 4], { name: "recipe-a", steps: 1, pending: [4] });
    b = writeSeedsFixture(dirB, [11, 12, 13], { name: "recipe-b", steps: 1, harnesses: ["codex"] });
    one = await startViewServer({ runDirs: [dirA] });
    two = await startViewServer({ runDirs: [dirA, dirB] });
  });
  afterAll(async () => {
    await one?.close();
    await two?.close();
  });

  it("lists the runs with their seeds", async () => {
    expect(await get(two.port, "/api/runs")).toEqual([
      { index: 0, name: "recipe-a", dir: dirA, seeds: [1, 2, 3, 4] },
      { index: 1, name: "recipe-b", dir: dirB, seeds: [11, 12, 13] },
    ]);
  });

  it("answers each finished seed's numbers, their spread, and the seeds still running", async () => {
    const s = await get(one.port, "/api/seeds");
    expect(s.difference).toBeNull();
    expect(s.runs).toHaveLength(1);
    const r = s.runs[0];
    expect(r).toMatchObject({ index: 0, name: "recipe-a", dir: dirA, seeds: [1, 2, 3, 4], pending: [4] });
    const finished = a.slice(0, 3);
    expect(r.summary.seeds.map((x: any) => x.seed)).toEqual([1, 2, 3]);
    finished.forEach((f, i) => {
      expect(r.summary.seeds[i]).toMatchObject({ runDir: f.dir, heldOut: { before: f.summary.heldOut.before, after: f.summary.heldOut.after } });
      expect(r.summary.seeds[i].heldOut.gain).toBeCloseTo(gainOf(f), 12);
    });
    const gains = finished.map(gainOf);
    const mean = gains.reduce((x, y) => x + y) / 3;
    const sd = Math.sqrt(gains.reduce((x, g) => x + (g - mean) ** 2, 0) / 2);
    const h = r.summary.heldOut;
    expect(h.n).toBe(3);
    expect(h.gain.mean).toBeCloseTo(mean, 12);
    expect(h.gain.sd).toBeCloseTo(sd, 12);
    expect(h.gain.ci95[1] - h.gain.mean).toBeCloseTo((4.302653 * sd) / Math.sqrt(3), 5);
    expect(Object.keys(h.byHarness)).toEqual(["claude-code", "codex"]);
  });

  it("compares two recipes by the difference of their mean gains, with Welch's interval", async () => {
    const s = await get(two.port, "/api/seeds");
    expect(s.runs.map((r: any) => r.index)).toEqual([0, 1]);
    const [ra, rb] = s.runs.map((r: any) => r.summary.heldOut);
    const d = s.difference;
    expect(d.difference).toBeCloseTo(rb.gain.mean - ra.gain.mean, 12);
    expect(d).toMatchObject(compareGains({ ...ra.gain, n: ra.n }, { ...rb.gain, n: rb.n }));
    const va = ra.gain.sd ** 2 / 3;
    const vb = rb.gain.sd ** 2 / 3;
    const df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2);
    expect(d.df).toBeCloseTo(df, 9);
    expect(d.ci95[1] - d.difference).toBeCloseTo(studentTQuantile(0.975, df) * Math.sqrt(va + vb), 9);
    // Per harness: only the harness both recipes ran.
    expect(Object.keys(d.byHarness)).toEqual(["codex"]);
    expect(b.map(gainOf)).toHaveLength(3);
  });
});
