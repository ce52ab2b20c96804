/**
 * `engine.serve` without vLLM itself: what a researcher sees when the spec gives both or neither
 * of baseUrl and serve (a diagnostic at the engine, with a hint), the command line reins starts,
 * and a server that dies, hangs past its start timeout or is interrupted by Ctrl-C while starting:
 * `reins eval` ends with EngineServerFailed and the log's tail, exit 1, and leaves no process.
 * The "python" here is a shell script standing in for a broken or slow vLLM install.
 */
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ResolvedVllmServe } from "../../src/compiler/contract/plan.js";
import { compilePlan } from "../../src/compiler/index.js";
import { createVllmEngine } from "../../src/runtime/engines/vllm.js";
import { buildServeCommand, defaultServePython } from "../../src/runtime/engines/vllm-server.js";
import { tempDir, writeSpecs } from "../executor/helpers.js";
import { reinsAsync, type ReinsAsyncOptions } from "../reins-cli.js";
import { evaluationWithEngine } from "./replay.js";
import { pidAlive } from "../suite-hygiene.js";

const evaluation = (engine: string): string => evaluationWithEngine(`\n${engine}`);

function reins(args: string[], onStderr?: ReinsAsyncOptions["onStderr"]) {
  return reinsAsync(args, { onStderr });
}

/** A stand-in for the server's python: a script, and a model directory that already holds a model. */
function fakeServer(dir: string, body: string): { python: string; modelDir: string } {
  const python = join(dir, "python");
  writeFileSync(python, `#!/bin/sh\n${body}\n`);
  chmodSync(python, 0o755);
  const modelDir = join(dir, "policy");
  mkdirSync(modelDir);
  writeFileSync(join(modelDir, "config.json"), "{}\n");
  return { python, modelDir };
}

describe("engine.serve in the spec", () => {
  it("both baseUrl and serve, or neither: EngineServeConflict at the engine, with a hint", async () => {
    const dir = tempDir();
    const both = await reins([
      "validate",
      writeSpecs(dir, evaluation(`    type: vllm\n    model: m\n    baseUrl: http://127.0.0.1:9\n    serve: {modelPath: policy}`)),
    ]);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/error\[EngineServeConflict\]: The vllm engine gives both baseUrl and serve\./);
    expect(both.stderr).toMatch(/:\d+:\d+/);
    expect(both.stderr).toContain("hint: Give the vllm engine exactly one of baseUrl (a server you run) and serve (reins starts one for the command).");
    const dir2 = tempDir();
    const neither = await reins(["validate", writeSpecs(dir2, evaluation(`    type: vllm\n    model: m`))]);
    expect(neither.code).toBe(1);
    expect(neither.stderr).toContain("error[EngineServeConflict]: The vllm engine gives neither baseUrl nor serve.");
  }, 60_000);

  it("the command line: the model directory, the served name, loopback, eager, no tokenizer, reload routes on, telemetry off", () => {
    const serve: ResolvedVllmServe = { modelPath: "/m/policy", maxModelLen: 2048, dtype: "bfloat16", args: ["--seed", "3"], startTimeoutSeconds: 600 };
    const cmd = buildServeCommand(serve, "served-policy", 40123, { REINS_SCALE_PYTHON_DIR: "/opt/scale" });
    expect(cmd.command).toBe("/opt/scale/bin/python");
    expect(cmd.args.join(" ")).toBe(
      "-m vllm.entrypoints.openai.api_server --model /m/policy --served-model-name served-policy --host 127.0.0.1 --port 40123 --enforce-eager --max-model-len 2048 --dtype bfloat16 --skip-tokenizer-init --seed 3",
    );
    expect(cmd.env).toMatchObject({
      VLLM_SERVER_DEV_MODE: "1",
      VLLM_NO_USAGE_STATS: "1",
      DO_NOT_TRACK: "1",
      VLLM_CPU_KVCACHE_SPACE: "1",
      VLLM_CPU_OMP_THREADS_BIND: "nobind",
    });
    expect(buildServeCommand({ ...serve, python: "/usr/local/bin/python3.11" }, "m", 1).command).toBe("/usr/local/bin/python3.11");
    expect(defaultServePython({ HOME: "/home/r" })).toMatch(/\.cache\/reins\/scale-python\/bin\/python$/);
  });

  it("serve's modelPath is absolute in the plan, relative to the spec; defaults filled; the hash does not depend on where the project lives", () => {
    const a = tempDir();
    mkdirSync(join(a, "specs"));
    writeSpecs(join(a, "specs"), evaluation(`    type: vllm\n    model: m\n    serve: {modelPath: ../.reins/policy}`));
    const b = tempDir();
    cpSync(a, b, { recursive: true });
    const planIn = (cwd: string) => {
      const r = compilePlan(["specs/specs.yaml"], { cwd, env: {}, projectRoot: "." });
      expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      return r.value!;
    };
    const [pa, pb] = [planIn(a), planIn(b)];
    expect(pa.model!.engine).toEqual({
      type: "vllm",
      model: "m",
      serve: { modelPath: join(a, ".reins", "policy"), maxModelLen: 32768, dtype: "bfloat16", args: [], startTimeoutSeconds: 600 },
    });
    expect(pb.hash).toBe(pa.hash);
  });

  it("a command that starts no server (reins proxy, a judge built elsewhere) refuses a served engine with EngineServeUnsupported", async () => {
    const serve: ResolvedVllmServe = { modelPath: "/m/policy", maxModelLen: 2048, dtype: "bfloat16", args: [], startTimeoutSeconds: 600 };
    await expect(createVllmEngine({ type: "vllm", model: "m", serve }, {} as never)).rejects.toMatchObject({ code: "EngineServeUnsupported" });
  });
});

describe("reins eval when the server reins starts does not come up", () => {
  it("a server that exits at once: EngineServerFailed with the end of its log, exit 1, no stack trace", async () => {
    const dir = tempDir();
    const { python, modelDir } = fakeServer(
      dir,
      `echo "Traceback (most recent call last):" >&2\necho "ModuleNotFoundError: No module named 'vllm'" >&2\nexit 1`,
    );
    const file = writeSpecs(dir, evaluation(`    type: vllm\n    model: m\n    serve: {python: "${python}", modelPath: "${modelDir}"}`));
    const r = await reins(["eval", file, "--out", join(dir, "run"), "--quiet"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /error\[EngineServerFailed\]: The vLLM server reins started \(.*python -m vllm\.entrypoints\.openai\.api_server --model .*policy\) exited before it answered \(exit code 1\)/,
    );
    expect(r.stderr).toContain("ModuleNotFoundError: No module named 'vllm'");
    expect(r.stderr).toMatch(/hint: Read the server's log \(vllm-server\.log in the run directory\)/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(readFileSync(join(dir, "run", "vllm-server.log"), "utf8")).toContain("No module named 'vllm'");
  }, 60_000);

  it("a server that never answers: stopped after serve.startTimeoutSeconds, and its process is gone", async () => {
    const dir = tempDir();
    const { python, modelDir } = fakeServer(dir, `echo "fake server pid $$"\nexec sleep 300`);
    const file = writeSpecs(
      dir,
      evaluation(`    type: vllm\n    model: m\n    serve: {python: "${python}", modelPath: "${modelDir}", startTimeoutSeconds: 2}`),
    );
    const r = await reins(["eval", file, "--out", join(dir, "run"), "--quiet"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[EngineServerFailed\]: .* did not answer http:\/\/127\.0\.0\.1:\d+\/v1\/models within 2 s/);
    const pid = Number(/fake server pid (\d+)/.exec(readFileSync(join(dir, "run", "vllm-server.log"), "utf8"))![1]);
    expect(pidAlive(pid)).toBe(false);
  }, 60_000);

  it("Ctrl-C while the server starts: the wait ends, the server is stopped, interrupted (exit 130)", async () => {
    const dir = tempDir();
    const { python, modelDir } = fakeServer(dir, `echo "fake server pid $$"\nexec sleep 300`);
    const file = writeSpecs(dir, evaluation(`    type: vllm\n    model: m\n    serve: {python: "${python}", modelPath: "${modelDir}"}`));
    const log = join(dir, "run", "vllm-server.log");
    let sent = false;
    const r = await reins(["eval", file, "--out", join(dir, "run")], (text, child) => {
      if (sent || !text.includes("starting vLLM")) return;
      sent = true;
      // Once the script has started (its pid in the log), as a researcher presses Ctrl-C.
      const poll = setInterval(() => {
        if (existsSync(log) && /fake server pid \d+/.test(readFileSync(log, "utf8"))) {
          clearInterval(poll);
          child.kill("SIGINT");
        }
      }, 100);
    });
    expect(sent).toBe(true);
    expect(r.code).toBe(130);
    expect(r.stderr).toContain("interrupted before the first rollout; resume with: reins eval --resume");
    expect(r.stderr).not.toContain("error[");
    const pid = Number(/fake server pid (\d+)/.exec(readFileSync(log, "utf8"))![1]);
    expect(pidAlive(pid)).toBe(false);
  }, 60_000);
});

/**
 * A stand-in vLLM that starts at once: it answers the probe as vLLM 0.32.0 does (/version, /v1/models)
 * on the --port reins gives it, and 404 to everything else, so every completion fails.
 */
const PROBE_ONLY_SERVER = `echo "fake server pid $$"
exec /usr/bin/python3 -c '
import http.server, json, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
name = sys.argv[sys.argv.index("--served-model-name") + 1]
answers = {"/version": {"version": "0.32.0"}, "/v1/models": {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "vllm", "max_model_len": 2048}]}}
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self):
        body = answers.get(self.path)
        self.send_response(200 if body else 404)
        data = json.dumps(body or {"error": "not found"}).encode()
        self.send_header("content-type", "application/json"); self.send_header("content-length", str(len(data))); self.end_headers()
        self.wfile.write(data)
    do_GET = answer
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0)); self.answer()
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
' "$@"`;

describe("reins eval stops the server it started when the evaluation ends", () => {
  it("after rollouts whose every completion failed: the engine block is reported and the server is gone", async () => {
    const dir = tempDir();
    const { python, modelDir } = fakeServer(dir, PROBE_ONLY_SERVER);
    const file = writeSpecs(dir, evaluation(`    type: vllm\n    model: m\n    serve: {python: "${python}", modelPath: "${modelDir}"}`));
    const r = await reins(["eval", file, "--out", join(dir, "run"), "--json", "--quiet"]);
    const summary = JSON.parse(r.stdout) as { engine: unknown; infraFailures: number };
    expect(summary.engine).toEqual({ type: "vllm", server: "vllm", version: "0.32.0", logprobsMode: "raw" });
    expect(summary.infraFailures).toBe(1);
    const about = JSON.parse(readFileSync(join(dir, "run", "vllm-server.json"), "utf8")) as { pid: number; baseUrl: string; command: string[] };
    expect(about.command.slice(1, 5)).toEqual(["-m", "vllm.entrypoints.openai.api_server", "--model", modelDir]);
    expect(pidAlive(about.pid)).toBe(false);
  }, 120_000);

  it("Ctrl-C once the server answers: the evaluation is interrupted, and the server is gone", async () => {
    const dir = tempDir();
    const { python, modelDir } = fakeServer(dir, PROBE_ONLY_SERVER);
    const file = writeSpecs(dir, evaluation(`    type: vllm\n    model: m\n    serve: {python: "${python}", modelPath: "${modelDir}"}`));
    let sent = false;
    const r = await reins(["eval", file, "--out", join(dir, "run")], (text, child) => {
      if (sent || !/vLLM answers at/.test(text)) return;
      sent = true;
      child.kill("SIGINT");
    });
    expect(sent).toBe(true);
    expect(r.code).toBe(130);
    expect(r.stderr).toContain("interrupted; resume with: reins eval --resume");
    const pid = Number(/fake server pid (\d+)/.exec(readFileSync(join(dir, "run", "vllm-server.log"), "utf8"))![1]);
    expect(pidAlive(pid)).toBe(false);
  }, 120_000);
});
