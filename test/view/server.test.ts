/**
 * `reins view`'s server over a run directory, through real HTTP on loopback: the API answers with
 * the run's numbers, follows a run that is still being written, finds nothing through path
 * tricks, refuses foreign Host headers, and the CLI command starts, prints its URL and stops.
 */
import { appendFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startViewServer, type ViewHandle } from "../../src/runtime/index.js";
import { loadTokenizer } from "../../src/runtime/model/tokenizer.js";
import { formatRecordLine } from "../../src/runtime/records/index.js";
import { reins, spawnReins } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { callRecord, writeRunFixture, type Fixture } from "./run-fixture.js";

/** A GET with the path sent exactly as written (no URL normalization) and an optional Host. */
function get(port: number, path: string, host?: string): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers: host ? { host } : {} }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("reins view: the API over a run directory", () => {
  let fixture: Fixture;
  let view: ViewHandle;
  const hostile = "s9-evil<img src=x onerror=alert(1)>";

  beforeAll(async () => {
    const dir = tempDir("reins-view-");
    const random = () => 0.5;
    const qwen3 = await loadTokenizer({ type: "qwen3" });
    fixture = writeRunFixture(dir, {
      encode: (text) => qwen3.encode(text),
      extra: [
        {
          id: hostile,
          task: "write-word-yes-000",
          harness: "codex",
          step: 9,
          calls: [callRecord(hostile, 0, [1, 2, 3], [4, 5], random)],
          stdout: "<script>alert(1)</script>",
        },
      ],
      running: false,
    });
    view = await startViewServer({ runDirs: [dir] });
  });
  afterAll(async () => view?.close());

  it("binds loopback and serves the app with a strict content security policy", async () => {
    expect(view.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await get(view.port, "/");
    expect(page.status).toBe(200);
    expect(page.body).toContain('<script type="module" src="/app.js">');
    expect(String(page.headers["content-security-policy"])).toContain("script-src 'self'");
  });

  it("answers the overview with the run's pass rates, per harness and per task, and the summary's reports", async () => {
    const o = JSON.parse((await get(view.port, "/api/runs/0/overview")).body);
    expect(o.rollouts).toBe(fixture.rollouts.length);
    const train = o.phases.find((p: { phase: string }) => p.phase === "train");
    for (const harness of ["claude-code", "codex"]) {
      const mine = fixture.rollouts.filter((r) => r.step >= 1 && r.harness === harness && !r.task.startsWith("held-out"));
      const row = train.byHarness.find((b: { key: string }) => b.key === harness);
      expect(row.rollouts).toBe(mine.length);
      expect(row.passRate).toBeCloseTo(mine.filter((r) => r.passed).length / mine.length, 12);
    }
    expect(train.byTask.map((b: { key: string }) => b.key)).toEqual(expect.arrayContaining(fixture.taskNames));
    expect(o.summary.heldOut).toEqual(fixture.summary.heldOut);
    expect(o.summary.fidelity).toEqual(fixture.summary.fidelity);
    expect(o.heldOut.map((h: { passRate: number }) => h.passRate)).toEqual([fixture.summary.heldOut.before, fixture.summary.heldOut.after]);
    expect(o.metrics.loss.length).toBe(3);
  });

  it("builds a rollout's prefix tree with the trajectories code: a retried call is a dead leaf, a title call is filtered", async () => {
    const rows = JSON.parse((await get(view.port, "/api/runs/0/rollouts")).body);
    const ids: string[] = rows.rows.map((r: unknown[]) => r[0] as string);
    let sawDead = false;
    let sawTitle = false;
    for (const id of ids.slice(0, 40)) {
      const tree = JSON.parse((await get(view.port, `/api/runs/0/rollouts/${encodeURIComponent(id)}/tree`)).body);
      if (tree.calls.some((c: { drop: string | null }) => c.drop === "dead-leaf")) sawDead = true;
      if (tree.calls.some((c: { drop: string | null; callClass: string }) => c.drop === "class" && c.callClass === "title")) sawTitle = true;
      expect(tree.stats.trainedTokens).toBeGreaterThan(0);
    }
    expect(sawDead, "a dead leaf").toBe(true);
    expect(sawTitle, "a filtered title call").toBe(true);
  });

  it("pages one call's tokens with the trained/context mask and the sampled logprobs", async () => {
    const id = fixture.rollouts.find((r) => r.step === 1)!.id;
    const tree = JSON.parse((await get(view.port, `/api/runs/0/rollouts/${id}/tree`)).body);
    const last = tree.calls.at(-1);
    const page = JSON.parse((await get(view.port, `/api/runs/0/rollouts/${id}/calls/${last.seq}`)).body);
    expect(page.total).toBe(last.promptLength + last.completionLength);
    expect(page.marks.slice(page.promptLength - page.from)).toEqual(Array(last.completionLength).fill("trained"));
    expect(page.marks[0]).toBe("context");
    expect(page.logprobs.slice(page.promptLength - page.from).every((x: number | null) => typeof x === "number")).toBe(true);
    expect(page.conversation.completion.text).toMatch(/^I wrote (yes|no) into answer\.txt\.<\|im_end\|>$/);
  });

  it("overlays the trainer's logprob of each trained token where the trainer recorded it (paths joined by leaf), and never a misaligned one", async () => {
    const [one, two] = fixture.rollouts.filter((r) => r.step === 1);
    const tree = JSON.parse((await get(view.port, `/api/runs/0/rollouts/${one.id}/tree`)).body);
    // The trained tokens in the packed tree's order: kept generated nodes by id, depth-first.
    const offsets = new Map<number, number>();
    let trained = 0;
    for (const n of tree.nodes)
      if (n.kept && n.generated) {
        offsets.set(n.id, trained);
        trained += n.tokens;
      }
    const values = Array.from({ length: trained }, (_, k) => -k / 1000);
    const half = Math.floor(trained / 2);
    mkdirSync(join(fixture.dir, "trainer-logprobs"), { recursive: true });
    // A per-path batch's rows, out of order in the file; and a record that does not fit its tree.
    writeFileSync(
      join(fixture.dir, "trainer-logprobs", "step-1.jsonl"),
      `${[
        { rollout: one.id, leaf: 1, logprobs: values.slice(half) },
        { rollout: one.id, leaf: 0, logprobs: values.slice(0, half) },
        { rollout: two.id, leaf: null, logprobs: [-0.5] },
      ]
        .map((l) => JSON.stringify(l))
        .join("\n")}\n`,
    );
    const last = tree.calls.at(-1);
    const page = JSON.parse((await get(view.port, `/api/runs/0/rollouts/${one.id}/calls/${last.seq}`)).body);
    expect(page.trainerNote).toBeUndefined();
    const start = page.promptLength - page.from;
    const end = offsets.get(last.endNode)!;
    expect(page.trainerLogprobs.slice(start)).toEqual(Array.from({ length: last.completionLength }, (_, i) => -(end + i) / 1000));
    // Earlier calls' completions in this call's prompt are trained too; the context is not.
    expect(page.trainerLogprobs.map((x: number | null) => x !== null)).toEqual(page.marks.map((m: string) => m === "trained"));
    expect(page.marks.slice(0, start)).toContain("context");
    const other = JSON.parse((await get(view.port, `/api/runs/0/rollouts/${two.id}/calls/0`)).body);
    expect(other.trainerLogprobs.every((x: number | null) => x === null)).toBe(true);
    expect(other.trainerNote).toMatch(/do not match/);
  });

  it("serves a try's workspace diff, and nothing through a link in its folder", async () => {
    const [one, two, three] = fixture.rollouts.filter((r) => r.step === 1);
    const diffs = join(fixture.dir, "workspace-diff");
    mkdirSync(diffs, { recursive: true });
    const diff = {
      formatVersion: 1,
      added: 1,
      modified: 0,
      deleted: 0,
      unchanged: 2,
      files: [
        {
          path: "answer.txt",
          status: "added",
          kind: "text",
          bytesBefore: null,
          bytesAfter: 4,
          patch: "--- /dev/null\n+++ b/answer.txt\n@@ -0,0 +1 @@\n+yes\n",
        },
      ],
    };
    writeFileSync(join(diffs, `${one.id}.json`), JSON.stringify(diff));
    rmSync(join(diffs, `${two.id}.json`), { force: true });
    rmSync(join(diffs, `${three.id}.json`), { force: true });
    symlinkSync("/etc/passwd", join(diffs, `${two.id}.json`));
    expect(JSON.parse((await get(view.port, `/api/runs/0/rollouts/${one.id}/diff`)).body)).toEqual({ recorded: true, ...diff });
    for (const id of [two.id, three.id]) {
      const r = await get(view.port, `/api/runs/0/rollouts/${id}/diff`);
      expect(r.body).not.toContain("root:");
      // The link is refused with a note (test/security/view.test.ts); the absent file is simply absent.
      expect(JSON.parse(r.body)).toEqual(
        id === two.id ? { recorded: false, refused: expect.objectContaining({ code: "ViewFileRefused" }) } : { recorded: false },
      );
    }
  });

  it("finds nothing through path tricks: traversal, encoded slashes, unknown ids, other files", async () => {
    for (const path of [
      "/../../etc/passwd",
      "/api/runs/0/rollouts/../../../../etc/passwd",
      "/api/runs/0/rollouts/..%2F..%2F..%2F..%2Fetc%2Fpasswd",
      "/api/runs/0/rollouts/%2Fetc%2Fpasswd",
      `/api/runs/0/rollouts/${fixture.rollouts[0].id}/output/..%2F..%2Fplan.json`,
      `/api/runs/0/rollouts/${fixture.rollouts[0].id}/output/plan.json`,
      "/api/runs/1/overview",
      "/api/runs/0/../plan.json",
      "/plan.json",
      "/api/runs/0/rollouts/%E0%A4%A",
    ]) {
      const r = await get(view.port, path);
      expect(r.status, path).toBe(404);
      expect(r.body, path).not.toContain("root:");
      expect(r.body, path).not.toContain("planVersion");
    }
  });

  it("serves a hostile rollout id and output as data, and refuses requests for another host", async () => {
    const r = JSON.parse((await get(view.port, `/api/runs/0/rollouts/${encodeURIComponent(hostile)}`)).body);
    expect(r.row.id).toBe(hostile);
    expect((await get(view.port, `/api/runs/0/rollouts/${encodeURIComponent(hostile)}/output/stdout`)).body).toBe("");
    const foreign = await get(view.port, "/api/runs/0/overview", "attacker.example:80");
    expect(foreign.status).toBe(421);
  });

  it("follows a run that is still being written: appended lines count, a torn last line waits for its newline", async () => {
    const dir = tempDir("reins-view-live-");
    const live = writeRunFixture(dir, { steps: 1, running: true });
    const server = await startViewServer({ runDirs: [dir] });
    try {
      const count = async () => JSON.parse((await get(server.port, "/api/runs/0/overview")).body).rollouts as number;
      expect(await count()).toBe(live.rollouts.length);
      const next = { ...live.rollouts[0], id: "s2-new-0", step: 2 };
      const line = formatRecordLine(next);
      appendFileSync(join(dir, "rollouts.jsonl"), line.slice(0, 40));
      expect(await count()).toBe(live.rollouts.length);
      appendFileSync(join(dir, "rollouts.jsonl"), line.slice(40));
      expect(await count()).toBe(live.rollouts.length + 1);
      expect((await get(server.port, "/api/runs/0/rollouts/s2-new-0")).status).toBe(200);
      const o = JSON.parse((await get(server.port, "/api/runs/0/overview")).body);
      expect(o.finished).toBe(false);
    } finally {
      await server.close();
    }
  });
});

describe("reins view: the command", () => {
  it("refuses a directory that is not a run, with a catalogued error and exit 1", () => {
    const dir = tempDir("reins-view-empty-");
    const r = reins(["view", dir], { timeout: 120_000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[ViewRunNotFound]");
    expect(r.stderr).toMatch(/hint: /);
    expect(r.stderr).not.toMatch(/^\s+at /m);
  }, 150_000);

  it("prints the URL on stderr, serves the run and stops on Ctrl-C", async () => {
    const dir = tempDir("reins-view-cli-");
    writeRunFixture(dir, { steps: 1 });
    const child = spawnReins(["view", dir, "--port", "0"]);
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let err = "";
        child.stderr.on("data", (d) => {
          err += String(d);
          const m = /reins view: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(err);
          if (m) resolve(m[1]);
        });
        child.on("exit", (code) => reject(new Error(`exited ${code}: ${err}`)));
      });
      const runs = (await (await fetch(`${url}api/runs`)).json()) as { name: string }[];
      expect(runs[0].name).toBe("view-fixture");
      const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      child.kill("SIGINT");
      expect(await exit).toBe(130);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    expect(readFileSync(join(dir, "plan.json"), "utf8")).toContain("view-fixture");
  }, 150_000);
});
