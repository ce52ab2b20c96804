/**
 * `reins view` reads only its run directory. A run directory may be someone else's (copied from
 * another machine, or written by a run whose files a hostile harness shaped), and the viewer may
 * be read by a browser, so: every file it opens resolves (links followed) inside the run
 * directory's real path, is a regular file (a FIFO or a device is never read: nothing blocks and
 * nothing streams without end), and is size-capped; a refused file is skipped with a note or
 * answered with an error, and the server keeps serving. A bind other than loopback needs
 * `--allow-remote`, and then says on stderr who can read the runs.
 */
import { spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startViewServer, type ViewHandle } from "../../src/runtime/index.js";
import { spawnReins } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { writeRunFixture, type Fixture } from "../view/run-fixture.js";

const SECRET = "TOPSECRET-outside-the-run-7f3a";
const MiB = 1024 * 1024;

interface Reply {
  status: number;
  body: string;
  ms: number;
}

/** A GET on loopback that gives up after `timeoutMs` (a hung server fails the test, never the suite). */
function get(port: number, path: string, timeoutMs = 5000): Promise<Reply> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, ms: Date.now() - t0 }));
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${path}: no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

const getJson = async (port: number, path: string) => JSON.parse((await get(port, path)).body);

/** A run directory of one training step, written the way the run store writes one. */
function runDir(prefix: string): Fixture {
  return writeRunFixture(tempDir(prefix), { steps: 1 });
}

function mkfifo(path: string): void {
  rmSync(path, { force: true });
  const r = spawnSync("mkfifo", [path]);
  if (r.status !== 0) throw new Error(`mkfifo ${path} failed: ${r.stderr}`);
}

function replaceWithLink(target: string, path: string): void {
  rmSync(path, { recursive: true, force: true });
  symlinkSync(target, path);
}

describe("reins view: only the run directory's own files", () => {
  let links: Fixture;
  let view: ViewHandle;

  beforeAll(async () => {
    links = runDir("reins-view-links-");
    view = await startViewServer({ runDirs: [links.dir] });
  });
  afterAll(async () => view?.close());

  it("serves nothing through a folder linked out of the run directory (harness output, workspace diffs, trainer logprobs)", async () => {
    const one = links.rollouts.find((r) => r.step === 1)!;
    const outside = tempDir("reins-view-outside-");
    for (const folder of ["harness-output", "workspace-diff", "trainer-logprobs"]) mkdirSync(join(outside, folder));
    writeFileSync(join(outside, "harness-output", `${one.id}.stdout`), `${SECRET}\n`);
    writeFileSync(
      join(outside, "workspace-diff", `${one.id}.json`),
      JSON.stringify({
        formatVersion: 1,
        added: 1,
        modified: 0,
        deleted: 0,
        unchanged: 0,
        files: [{ path: SECRET, status: "added", kind: "text", bytesBefore: null, bytesAfter: 1, patch: SECRET }],
      }),
    );
    writeFileSync(
      join(outside, "trainer-logprobs", "step-1.jsonl"),
      `${JSON.stringify({ rollout: one.id, leaf: -1, logprobs: Array(100_000).fill(-123.5) })}\n`,
    );
    for (const folder of ["harness-output", "workspace-diff", "trainer-logprobs"]) replaceWithLink(join(outside, folder), join(links.dir, folder));

    const stdout = await get(view.port, `/api/runs/0/rollouts/${one.id}/output/stdout`);
    expect(stdout.body).not.toContain(SECRET);
    expect(stdout.status).toBe(403);
    expect(JSON.parse(stdout.body)).toMatchObject({ code: "ViewFileRefused", file: `harness-output/${one.id}.stdout` });
    expect(JSON.parse(stdout.body).error).toMatch(/outside the run directory/);

    const diff = await get(view.port, `/api/runs/0/rollouts/${one.id}/diff`);
    expect(diff.body).not.toContain(SECRET);
    expect(JSON.parse(diff.body)).toMatchObject({ recorded: false, refused: { code: "ViewFileRefused", file: `workspace-diff/${one.id}.json` } });

    const tree = await getJson(view.port, `/api/runs/0/rollouts/${one.id}/tree`);
    const page = await get(view.port, `/api/runs/0/rollouts/${one.id}/calls/${tree.calls.at(-1).seq}`);
    expect(page.status).toBe(200);
    expect(page.body).not.toContain("-123.5");
    expect(JSON.parse(page.body).trainerLogprobs.every((x: number | null) => x === null)).toBe(true);
  });

  it("reads manifest.json and plan.json linked to files outside as absent, with a note; a link that stays inside is read", async () => {
    const run = runDir("reins-view-json-links-");
    const outside = tempDir("reins-view-outside-");
    writeFileSync(join(outside, "manifest.json"), JSON.stringify({ planHash: SECRET, secret: SECRET }));
    const plan = JSON.parse(readFileSync(join(run.dir, "plan.json"), "utf8"));
    writeFileSync(join(outside, "plan.json"), JSON.stringify({ ...plan, name: SECRET }));
    replaceWithLink(join(outside, "manifest.json"), join(run.dir, "manifest.json"));
    replaceWithLink(join(outside, "plan.json"), join(run.dir, "plan.json"));
    // summary.json through a relative link to another file of the run: still the run's own.
    mkdirSync(join(run.dir, "kept"));
    cpSync(join(run.dir, "summary.json"), join(run.dir, "kept", "final.json"));
    replaceWithLink(join("kept", "final.json"), join(run.dir, "summary.json"));

    const server = await startViewServer({ runDirs: [run.dir] });
    try {
      const runs = await get(server.port, "/api/runs");
      expect(runs.body).not.toContain(SECRET);
      const overview = await get(server.port, "/api/runs/0/overview");
      expect(overview.status).toBe(200);
      expect(overview.body).not.toContain(SECRET);
      const o = JSON.parse(overview.body);
      expect(o.run.manifest).toBeNull();
      expect(o.run.name).not.toBe(SECRET);
      expect(o.summary.heldOut).toEqual(run.summary.heldOut);
      const files = o.notes.map((n: { file: string; code: string }) => `${n.code} ${n.file}`).sort();
      expect(files).toEqual(["ViewFileRefused manifest.json", "ViewFileRefused plan.json"]);
      expect(o.notes[0].message).toMatch(/outside the run directory/);
    } finally {
      await server.close();
    }
  });

  it("does not load a tokenizer the plan names under /dev or as a FIFO: the tokens show as ids, and why", async () => {
    const run = runDir("reins-view-tokenizer-");
    const one = run.rollouts.find((r) => r.step === 1)!;
    const fifo = join(tempDir("reins-view-tokenizer-fifo-"), "tokenizer.json");
    mkfifo(fifo);
    const plan = JSON.parse(readFileSync(join(run.dir, "plan.json"), "utf8"));
    for (const [path, why] of [
      ["/dev/zero", /lies under \/dev/],
      [fifo, /a FIFO/],
    ] as const) {
      writeFileSync(join(run.dir, "plan.json"), JSON.stringify({ ...plan, model: { ...plan.model, tokenizer: { type: "file", path } } }));
      const server = await startViewServer({ runDirs: [run.dir] });
      try {
        const page = await get(server.port, `/api/runs/0/rollouts/${one.id}/calls/0`);
        expect(page.status).toBe(200);
        const p = JSON.parse(page.body);
        expect(p.pieces).toBeNull();
        expect(p.tokenizerMissing).toMatch(why);
      } finally {
        await server.close();
      }
    }
  });

  it("refuses files past their size cap before reading them: summary.json over 16 MiB, a workspace diff over 4 MiB", async () => {
    const run = runDir("reins-view-big-");
    const one = run.rollouts.find((r) => r.step === 1)!;
    truncateSync(join(run.dir, "summary.json"), 16 * MiB + 1);
    mkdirSync(join(run.dir, "workspace-diff"), { recursive: true });
    writeFileSync(join(run.dir, "workspace-diff", `${one.id}.json`), "");
    truncateSync(join(run.dir, "workspace-diff", `${one.id}.json`), 4 * MiB + 1);
    const server = await startViewServer({ runDirs: [run.dir] });
    try {
      const overview = await get(server.port, "/api/runs/0/overview");
      expect(overview.status).toBe(200);
      const o = JSON.parse(overview.body);
      expect(o.summary).toBeNull();
      expect(o.notes).toEqual([{ file: "summary.json", code: "ViewFileRefused", message: expect.stringMatching(/16777217 bytes.*16 MiB/) }]);
      const diff = JSON.parse((await get(server.port, `/api/runs/0/rollouts/${one.id}/diff`)).body);
      expect(diff).toMatchObject({ recorded: false, refused: { file: `workspace-diff/${one.id}.json`, message: expect.stringMatching(/4 MiB/) } });
    } finally {
      await server.close();
    }
  });
});

/** `reins view …` as a child process; resolves with its exit or, once it serves, its URL. */
function startCli(args: string[]): {
  child: ChildProcessWithoutNullStreams;
  ready: Promise<{ url?: string; code?: number | null; stderr: string }>;
  stderr: () => string;
} {
  const child = spawnReins(["view", ...args]);
  let err = "";
  let out = "";
  child.stderr.on("data", (d) => (err += String(d)));
  const ready = new Promise<{ url?: string; code?: number | null; stderr: string }>((resolve) => {
    child.stdout.on("data", (d) => {
      out += String(d);
      const m = /"url":\s*"(http:\/\/[^"]+)"/.exec(out);
      if (m) resolve({ url: m[1], stderr: err });
    });
    child.stderr.on("data", () => {
      const m = /reins view: (http:\/\/\S+\/)/.exec(err);
      if (m) resolve({ url: m[1], stderr: err });
    });
    child.on("exit", (code) => resolve({ code, stderr: err }));
  });
  return { child, ready, stderr: () => err };
}

async function stop(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  child.kill("SIGINT");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  const code = await exit;
  clearTimeout(timer);
  return code;
}

describe("reins view: devices and FIFOs never stall the server", () => {
  it("answers at once for summary.json -> /dev/zero and for FIFOs (summary, calls, harness output), and keeps serving", async () => {
    const zero = runDir("reins-view-zero-");
    replaceWithLink("/dev/zero", join(zero.dir, "summary.json"));
    const fifo = runDir("reins-view-fifo-");
    const one = fifo.rollouts.find((r) => r.step === 1)!;
    mkfifo(join(fifo.dir, "summary.json"));
    mkfifo(join(fifo.dir, "calls.jsonl"));
    mkfifo(join(fifo.dir, "harness-output", `${one.id}.stdout`));
    // The server runs in its own process: a server that blocks cannot take this test process with it.
    const cli = startCli([zero.dir, fifo.dir, "--port", "0", "--json"]);
    let exit: number | null = null;
    try {
      const started = await cli.ready;
      expect(started.url, started.stderr).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const port = Number(new URL(started.url!).port);

      const fifoOverview = await get(port, "/api/runs/1/overview");
      expect(fifoOverview.status).toBe(200);
      const notes = JSON.parse(fifoOverview.body).notes as { file: string; message: string }[];
      expect(notes.find((n) => n.file === "summary.json")?.message).toMatch(/a FIFO/);
      const calls = await get(port, `/api/runs/1/rollouts/${one.id}/calls`);
      expect(calls.status).toBe(200);
      expect(JSON.parse(calls.body).calls).toEqual([]);
      const stdout = await get(port, `/api/runs/1/rollouts/${one.id}/output/stdout`);
      expect(stdout.status).toBe(403);
      expect(stdout.body).toMatch(/a FIFO/);

      const zeroOverview = await get(port, "/api/runs/0/overview");
      expect(zeroOverview.status).toBe(200);
      expect(zeroOverview.ms).toBeLessThan(5000);
      const z = JSON.parse(zeroOverview.body);
      expect(z.summary).toBeNull();
      expect(z.notes).toEqual([
        { file: "summary.json", code: "ViewFileRefused", message: expect.stringMatching(/outside the run directory|character device/) },
      ]);

      // Still serving, and still itself.
      const runs = await get(port, "/api/runs");
      expect(runs.status).toBe(200);
      expect(JSON.parse(runs.body).map((r: { name: string }) => r.name)).toEqual(["view-fixture", "view-fixture"]);
      expect((await get(port, "/api/runs/0/rollouts")).status).toBe(200);
    } finally {
      exit = await stop(cli.child);
    }
    expect(exit, "Ctrl-C stops it").toBe(130);
  }, 120_000);
});

describe("reins view: a bind other than loopback", () => {
  it("is refused without --allow-remote: catalogued error, a hint, exit 1, nothing served", async () => {
    const run = runDir("reins-view-remote-");
    const cli = startCli([run.dir, "--host", "0.0.0.0", "--port", "0"]);
    try {
      const r = await cli.ready;
      expect(r.url, "it must not serve").toBeUndefined();
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("error[ViewRemoteBind]");
      expect(r.stderr).toMatch(/hint: .*--allow-remote/);
      expect(r.stderr).not.toMatch(/^\s+at /m);
    } finally {
      await stop(cli.child);
    }
    await expect(startViewServer({ runDirs: [run.dir], host: "0.0.0.0" })).rejects.toMatchObject({ code: "ViewRemoteBind" });
    await expect(startViewServer({ runDirs: [run.dir], host: "::" })).rejects.toMatchObject({ code: "ViewRemoteBind" });
  }, 120_000);

  it("starts with --allow-remote and warns on stderr who can read the runs", async () => {
    const run = runDir("reins-view-remote-ok-");
    const cli = startCli([run.dir, "--host", "0.0.0.0", "--port", "0", "--allow-remote"]);
    let exit: number | null = null;
    try {
      const r = await cli.ready;
      expect(r.url, r.stderr).toMatch(/^http:\/\/0\.0\.0\.0:\d+\/$/);
      const port = Number(new URL(r.url!).port);
      expect((await get(port, "/api/runs")).status).toBe(200);
      expect(cli.stderr()).toMatch(/warning: .*0\.0\.0\.0.*anyone who can reach/);
    } finally {
      exit = await stop(cli.child);
    }
    expect(exit, "Ctrl-C stops it").toBe(130);
  }, 120_000);
});
