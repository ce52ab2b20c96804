/**
 * `reins run` with engine.serve, without vLLM itself: the "python" is a script standing in for
 * vLLM (it answers the probe on the --port reins gives it). What a researcher sees when the
 * server reins started cannot load weights (EngineNotTrainable, before any rollout, and the server
 * is gone); a policy whose logits head is tied to its embeddings (the project's own) gets a new
 * server on each new version instead of an in-place reload; and what happens to the server when
 * reins is killed with SIGKILL: it outlives reins
 * (nothing can stop it then), and `reins run --resume` stops it before starting its own, so no
 * stale server is left behind or talked to.
 */
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { events, jsonl } from "../control/helpers.js";
import { describe, expect, it } from "vitest";
import { stopStaleServer } from "../../src/runtime/control/served-model.js";
import { reinsAsync, type ReinsAsyncOptions } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { pidAlive } from "../suite-hygiene.js";

/**
 * A vLLM 0.32.0 stand-in: the probe (its routes as `routes`); POST /pause answers, /collective_rpc
 * never does; completions are 3 tokens and the stop id. It prints its pid, its --model and each POST.
 */
function standIn(routes: string[]): string {
  return `echo "fake server pid $$"
exec /usr/bin/python3 -c '
import http.server, json, sys, time
port = int(sys.argv[sys.argv.index("--port") + 1])
name = sys.argv[sys.argv.index("--served-model-name") + 1]
model = sys.argv[sys.argv.index("--model") + 1]
paths = {p: {} for p in ${JSON.stringify(routes)}}
print("model", model, flush=True)
answers = {"/version": {"version": "0.32.0"}, "/v1/models": {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "vllm", "root": model, "max_model_len": 2048}]}, "/openapi.json": {"paths": paths}}
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self, body):
        self.send_response(200 if body is not None else 404)
        data = json.dumps(body if body is not None else {"error": "not found"}).encode()
        self.send_header("content-type", "application/json"); self.send_header("content-length", str(len(data))); self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.answer(answers.get(self.path))
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        print("POST", self.path, flush=True)
        if self.path.startswith("/collective_rpc"):
            time.sleep(3600)
        if self.path == "/v1/completions" and not body.get("stream"):
            ids = [40, 41, 42, body["stop_token_ids"][0]]
            lp = {"text_offset": [0] * 4, "token_logprobs": [-1.5] * 4, "tokens": ["token_id:%d" % i for i in ids], "top_logprobs": []}
            return self.answer({"id": "c", "object": "text_completion", "model": name, "choices": [{"index": 0, "text": "", "logprobs": lp, "finish_reason": "stop", "stop_reason": None, "token_ids": ids}]})
        self.answer({"status": "ok"} if self.path.split("?")[0] in paths else None)
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
' "$@"`;
}

/** The engines example in `dir`, served by the stand-in `body` instead of vLLM. */
function copyExample(dir: string, body: string): string {
  for (const f of ["engines/experiment.yaml", "engines/model.yaml", "quickstart/family.yaml"]) {
    mkdirSync(join(dir, "examples", f, ".."), { recursive: true });
    cpSync(join("examples", f), join(dir, "examples", f));
  }
  // Inside the project (--project-root DIR: examples/ and the .reins/ its Model names): a spec
  // may run no python outside it.
  const python = join(dir, "examples", "python");
  writeFileSync(python, `#!/bin/sh\n${body}\n`);
  chmodSync(python, 0o755);
  const modelFile = join(dir, "examples", "engines", "model.yaml");
  writeFileSync(modelFile, readFileSync(modelFile, "utf8").replace("    serve:\n", `    serve:\n      python: ${python}\n`));
  return join(dir, "examples", "engines", "experiment.yaml");
}

function reins(args: string[], onStderr?: ReinsAsyncOptions["onStderr"]) {
  return reinsAsync(args, { onStderr });
}

function serverPid(run: string): number {
  return (JSON.parse(readFileSync(join(run, "vllm-server.json"), "utf8")) as { pid: number }).pid;
}

describe("reins run with a server reins starts (a stand-in for vLLM)", () => {
  it("a server without reload routes: error[EngineNotTrainable] before any rollout, and the server is gone", async () => {
    const dir = tempDir();
    const file = copyExample(dir, standIn(["/v1/completions", "/v1/models", "/version"]));
    const run = join(dir, "run");
    const r = await reins(["run", file, "--project-root", dir, "--out", run]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[EngineNotTrainable]");
    expect(r.stderr).toContain("VLLM_SERVER_DEV_MODE=1");
    expect(r.stderr).toMatch(/vLLM answers at http:\/\/127\.0\.0\.1:\d+/);
    expect(pidAlive(serverPid(run))).toBe(false);
    expect(existsSync(join(run, "calls.jsonl"))).toBe(false);
  }, 120_000);

  it("the project's policy (tied head): vLLM is restarted on each new version, never reloaded in place; calls carry the version serving", async () => {
    const dir = tempDir();
    const file = copyExample(dir, standIn(["/v1/completions", "/v1/models", "/version", "/pause", "/resume", "/collective_rpc"]));
    const run = join(dir, "run");
    const r = await reins(["run", file, "--project-root", dir, "--out", run, "--json"]);
    expect(r.code, r.stderr.slice(-3000)).toBe(0);
    expect(r.stderr).toContain("vLLM is restarted on each new version");
    const log = readFileSync(join(run, "vllm-server.log"), "utf8");
    const policy = join(dir, ".reins", "engines", "policy");
    const checkpoints = events(run).filter((e) => e.type === "checkpoint");
    expect(checkpoints).toHaveLength(2);
    expect([...log.matchAll(/^model (.*)$/gm)].map((m) => m[1])).toEqual([policy, ...checkpoints.map((c) => c.weightsDir)]);
    expect(log).not.toContain("POST /collective_rpc");
    const pids = [...log.matchAll(/^fake server pid (\d+)$/gm)].map((m) => Number(m[1]));
    expect(pids).toHaveLength(3);
    expect(pids.filter(pidAlive)).toEqual([]);
    const versions = [readFileSync(join(policy, "READY"), "utf8").trim(), checkpoints[0].version];
    const stepOf = new Map(jsonl(run, "rollouts.jsonl").map((x: { id: string; step: number }) => [x.id, x.step]));
    const calls = jsonl(run, "calls.jsonl");
    expect(calls.length).toBeGreaterThanOrEqual(8);
    for (const c of calls) expect(c.weightsVersion).toBe(versions[stepOf.get(c.rolloutId) === checkpoints[0].step ? 0 : 1]);
  }, 180_000);

  it("kill -9 of reins leaves its server running; reins run --resume stops that server before it starts its own", async () => {
    const dir = tempDir();
    const file = copyExample(dir, standIn(["/v1/completions", "/v1/models", "/version", "/pause", "/resume", "/collective_rpc"]));
    const run = join(dir, "run");
    const first = await reins(["run", file, "--project-root", dir, "--out", run], (text, child) => {
      if (/vLLM answers at/.test(text)) child.kill("SIGKILL");
    });
    expect(first.signal).toBe("SIGKILL");
    const orphan = serverPid(run);
    expect(pidAlive(orphan)).toBe(true);

    let second: number | undefined;
    try {
      const resumed = await reins(["run", "--resume", run, "--project-root", dir], (text, child) => {
        if (/vLLM answers at/.test(text)) child.kill("SIGKILL");
      });
      expect(resumed.stderr).toContain(`stopped the vLLM server (pid ${orphan}) an earlier reins left running for this run directory`);
      expect(pidAlive(orphan)).toBe(false);
      second = serverPid(run);
      expect(second).not.toBe(orphan);
    } finally {
      // The second run was killed the same way: what it left is stopped the same way.
      await stopStaleServer(run);
      if (pidAlive(orphan)) process.kill(-orphan, "SIGKILL");
    }
    expect(pidAlive(second!)).toBe(false);
  }, 180_000);
});
