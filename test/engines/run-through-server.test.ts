/**
 * `reins run` through a vllm engine whose server you run (baseUrl), against a stand-in that
 * replays vLLM 0.32.0's probe and answers completions and the reload routes on loopback: the
 * real CLI, trainer worker, sandboxes and reins-agent. The run reloads the weights the trainer
 * starts from before the first rollout and each published step's after it, from the directory
 * save_weights wrote (safetensors, no model.onnx); every call records the version the server had
 * loaded when it answered; `engine` is in the --json outcome and manifest.json. And the refusals,
 * each before any rollout: logprobs that are not the sampling distribution's (SamplingUnfaithful),
 * a server without reload routes or whose model is not a directory here (EngineNotTrainable), a
 * server that cannot load the initial weights (EngineReloadFailed, and it is resumed anyway).
 * The same path through an sglang engine (a stand-in of SGLang 0.5's documented protocol): the
 * weights by /update_weights_from_disk, each call labelled by the server's weight_version.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ensureInitialPolicy } from "../../src/runtime/control/policy.js";
import { events, jsonl } from "../control/helpers.js";
import { reinsAsync } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { posts, readFixture, startReplay, type Replay } from "./replay.js";

const fx = readFixture("vllm/vllm-0.32.0.json");
const sg = readFixture("sglang/sglang-0.5-documented.json");

let replay: Replay | undefined;
afterEach(async () => {
  await replay?.close();
  replay = undefined;
});

/** The engines example in `dir`, its model pointed at `baseUrl` instead of a server reins starts. */
function copyExample(dir: string, baseUrl: string, edit: (model: string) => string = (m) => m): string {
  for (const f of ["engines/experiment.yaml", "engines/model.yaml", "quickstart/family.yaml"]) {
    mkdirSync(join(dir, "examples", f, ".."), { recursive: true });
    cpSync(join("examples", f), join(dir, "examples", f));
  }
  const modelFile = join(dir, "examples", "engines", "model.yaml");
  const model = readFileSync(modelFile, "utf8").replace(/ {4}serve:\n {6}modelPath: .*\n {6}dtype: .*\n/, `    baseUrl: ${baseUrl}/v1\n`);
  if (!model.includes("baseUrl")) throw new Error("model.yaml changed: no serve block to replace");
  writeFileSync(modelFile, edit(model));
  return join(dir, "examples", "engines", "experiment.yaml");
}

/** A vLLM 0.32.0 stand-in whose /v1/models names `root`; completions carry the count of reloads so far as their logprobs. */
async function standIn(root: string, probe: Record<string, unknown> = fx.probe): Promise<Replay & { reloads: () => number }> {
  const models = fx.probe["/v1/models"];
  const r = await startReplay({ ...probe, "/v1/models": { ...models, data: [{ ...models.data[0], root }] } });
  let reloads = 0;
  r.answer = (path, body) => {
    if (path === "/v1/completions") {
      const ids = [40, 41, 42, body.stop_token_ids[0]];
      const logprobs = ids.map(() => -0.5 * (reloads + 1));
      const choice = {
        index: 0,
        text: "",
        logprobs: { text_offset: ids.map(() => 0), token_logprobs: logprobs, tokens: ids.map((id: number) => `token_id:${id}`), top_logprobs: [] },
        finish_reason: "stop",
        stop_reason: null,
        token_ids: ids,
        prompt_token_ids: body.prompt,
      };
      return body.stream ? { sse: [{ choices: [choice] }, "[DONE]"] } : { json: { ...fx.completion.response, choices: [choice] } };
    }
    if (path === "/collective_rpc") reloads++;
    const step = (fx.reload as { path: string; response: unknown }[]).find((s) => s.path === path);
    return step ? { json: step.response } : undefined;
  };
  return Object.assign(r, { reloads: () => reloads });
}

function editExperiment(file: string, edit: (text: string) => string): void {
  writeFileSync(file, edit(readFileSync(file, "utf8")));
}

function reinsRun(args: string[]) {
  return reinsAsync(["run", ...args]);
}

/** A project copy with the initial policy made, as a server you run would serve it. */
async function project(): Promise<{ dir: string; policy: string }> {
  const dir = tempDir("reins-run-vllm-");
  const policy = join(dir, ".reins", "engines", "policy");
  await ensureInitialPolicy(policy, { seed: 7, python: "/usr/bin/python3" });
  return { dir, policy };
}

describe("reins run through a vLLM server you run (replayed vLLM 0.32.0)", () => {
  it("2 steps: the server reloads the initial weights, then each step's safetensors; every call records the version that answered it", async () => {
    const { dir, policy } = await project();
    const r = (replay = await standIn(policy));
    const file = copyExample(dir, r.url);
    const run = join(dir, "run");
    const out = await reinsRun([file, "--project-root", dir, "--out", run, "--json"]);
    expect(out.code, out.stderr.slice(-3000)).toBe(0);
    const summary = JSON.parse(out.stdout) as { engine: unknown; steps: number; versions: string[] };
    expect(summary.engine).toEqual({ type: "vllm", server: "vllm", version: "0.32.0", logprobsMode: "raw" });
    expect(summary.steps).toBe(2);
    // The project's policy ties its logits head: on vLLM's CPU build an in-place reload leaves it stale.
    expect(out.stderr).toContain("warning: the policy's logits head is tied to its embeddings");
    expect(JSON.parse(readFileSync(join(run, "manifest.json"), "utf8")).engine).toMatchObject({
      server: "vllm",
      routes: { reload: "/collective_rpc" },
      modelPath: policy,
    });

    // Reloads: the initial policy before any rollout, then step 1's and step 2's weights.
    const checkpoints = events(run).filter((e) => e.type === "checkpoint");
    expect(checkpoints.map((c) => c.phase)).toEqual(["step", "step"]);
    const initial = readFileSync(join(policy, "READY"), "utf8").trim();
    const versions = [initial, ...checkpoints.map((c) => c.version as string)];
    expect(new Set(versions).size).toBe(3);
    expect(summary.versions).toEqual(versions);
    const sent = posts(r).filter((p) => p.path !== "/v1/completions");
    expect(sent.filter((p) => p.path === "/collective_rpc").map((p) => p.body)).toEqual(
      [policy, ...checkpoints.map((c) => c.weightsDir as string)].map((weights_path) => ({ method: "reload_weights", kwargs: { weights_path } })),
    );
    expect(sent.filter((p) => p.path === "/update_weight_version").map((p) => p.body)).toEqual(versions.map((new_version) => ({ new_version })));
    expect(sent.slice(0, 5).map((p) => p.path)).toEqual(["/pause?mode=wait", "/collective_rpc", "/reset_prefix_cache", "/update_weight_version", "/resume"]);
    for (const c of checkpoints) {
      const files = readdirSync(c.weightsDir as string);
      expect(files).toContain("model.safetensors");
      expect(files).not.toContain("model.onnx");
    }
    // The first POST of all is the reload: nothing was sampled before the initial weights were in place.
    expect(posts(r)[0]!.path).toBe("/pause?mode=wait");

    // Every call's version is the one loaded when the server answered (its logprobs say after how many reloads).
    const calls = jsonl(run, "calls.jsonl");
    expect(calls.length).toBeGreaterThanOrEqual(8);
    for (const c of calls) {
      const reloads = Math.round(-c.completionLogprobs[0] / 0.5) - 1;
      expect(c.weightsVersion).toBe(versions[reloads - 1]);
    }
    expect(new Set(calls.map((c) => c.weightsVersion))).toEqual(new Set(versions.slice(0, 2)));
  }, 300_000);

  it("a model directory reins did not make (no READY) is trained as it is: not rewritten, named by the trainer from its content", async () => {
    const { dir, policy } = await project();
    const theirs = join(dir, "checkpoint");
    cpSync(policy, theirs, { recursive: true });
    rmSync(join(theirs, "READY"));
    const config = readFileSync(join(theirs, "config.json"), "utf8");
    const r = (replay = await standIn(theirs));
    const file = copyExample(dir, r.url);
    editExperiment(file, (t) => t.replace("  steps: 2\n", "  steps: 1\n"));
    const run = join(dir, "run");
    const out = await reinsRun([file, "--project-root", dir, "--out", run]);
    expect(out.code, out.stderr.slice(-3000)).toBe(0);
    expect(out.stdout).toContain("engine: vllm 0.32.0, raw logprobs");
    expect(out.stderr).not.toContain("created the initial policy");
    expect(existsSync(join(theirs, "READY"))).toBe(false);
    expect(readFileSync(join(theirs, "config.json"), "utf8")).toBe(config);
    const first = posts(r).find((p) => p.path === "/update_weight_version")!.body as { new_version: string };
    expect(first.new_version).toMatch(/^[0-9a-f]{16}$/);
    expect(new Set(jsonl(run, "calls.jsonl").map((c) => c.weightsVersion))).toEqual(new Set([first.new_version]));
  }, 300_000);

  it("refuses temperature 0.7 with raw logprobs before anything runs: error[SamplingUnfaithful], nothing sampled or reloaded", async () => {
    const { dir, policy } = await project();
    const r = (replay = await standIn(policy));
    const file = copyExample(dir, r.url, (m) => m.replace("temperature: 1.0", "temperature: 0.7"));
    const out = await reinsRun([file, "--project-root", dir, "--out", join(dir, "run")]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("error[SamplingUnfaithful]");
    expect(out.stderr).toContain("temperature 0.7");
    expect(out.stderr).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
    expect(posts(r)).toEqual([]);
    expect(existsSync(join(dir, "run", "calls.jsonl"))).toBe(false);
  }, 120_000);

  it("refuses a server without reload routes (no VLLM_SERVER_DEV_MODE): error[EngineNotTrainable] with the way to get them", async () => {
    const { dir, policy } = await project();
    const { "/server_info?config_format=json": _, ...plain } = fx.probe;
    const paths = Object.fromEntries(
      Object.entries(fx.probe["/openapi.json"].paths).filter(([p]) => ["/v1/completions", "/v1/models", "/version", "/health"].includes(p)),
    );
    const r = (replay = await standIn(policy, { ...plain, "/openapi.json": { paths } }));
    const file = copyExample(dir, r.url);
    const out = await reinsRun([file, "--project-root", dir, "--out", join(dir, "run")]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("error[EngineNotTrainable]");
    expect(out.stderr).toContain("VLLM_SERVER_DEV_MODE=1");
    expect(posts(r)).toEqual([]);
  }, 120_000);

  it("refuses a server whose model is not a directory on this machine: the trainer could not start from its weights", async () => {
    const { dir } = await project();
    const r = (replay = await standIn("Qwen/Qwen3-0.6B"));
    const file = copyExample(dir, r.url);
    const out = await reinsRun([file, "--project-root", dir, "--out", join(dir, "run")]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("error[EngineNotTrainable]");
    expect(out.stderr).toContain('serves "Qwen/Qwen3-0.6B", which is not a model directory on this machine');
    expect(posts(r)).toEqual([]);
  }, 120_000);

  it("a server that cannot load the initial weights stops the run before any rollout (EngineReloadFailed), and is resumed", async () => {
    const { dir, policy } = await project();
    const r = (replay = await standIn(policy));
    const answer = r.answer;
    r.answer = (path, body) => (path === "/collective_rpc" ? { status: 500, json: { error: "no safetensors found" } } : answer(path, body));
    const file = copyExample(dir, r.url);
    const out = await reinsRun([file, "--project-root", dir, "--out", join(dir, "run")]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("error[EngineReloadFailed]");
    expect(out.stderr).toContain("no safetensors found");
    expect(posts(r).map((p) => p.path)).toEqual(["/pause?mode=wait", "/collective_rpc", "/resume"]);
  }, 120_000);
});

/** An SGLang 0.5 stand-in serving `root`: /generate answers with the weight_version of the last /update_weights_from_disk. */
async function sglangStandIn(root: string): Promise<Replay> {
  const r = await startReplay({
    ...sg.probe,
    "/v1/models": { ...sg.probe["/v1/models"], data: [{ ...sg.probe["/v1/models"].data[0], root }] },
    "/get_model_info": { ...sg.probe["/get_model_info"], model_path: root },
  });
  let version = "default";
  r.answer = (path, body) => {
    if (path === "/generate") {
      const ids = [40, 41, 42, body.sampling_params.stop_token_ids[0]];
      const out = {
        text: "",
        output_ids: ids,
        meta_info: {
          ...sg.completion.response.meta_info,
          finish_reason: { type: "stop", matched: ids[3] },
          weight_version: version,
          completion_tokens: ids.length,
          output_token_logprobs: ids.map((id) => [-0.25, id, null]),
        },
      };
      return body.stream ? { sse: [out, "[DONE]"] } : { json: out };
    }
    if (path === "/update_weights_from_disk") {
      version = body.weight_version;
      return { json: sg.reload[0].response };
    }
    return undefined;
  };
  return r;
}

describe("reins run through an SGLang server you run (stand-in of SGLang 0.5's documented protocol)", () => {
  it("2 steps: /update_weights_from_disk with the initial policy, then each step's directory; calls carry the server's weight_version", async () => {
    const { dir, policy } = await project();
    const r = (replay = await sglangStandIn(policy));
    const file = copyExample(dir, r.url, (m) => m.replace("    type: vllm\n", "    type: sglang\n").replace(`baseUrl: ${r.url}/v1`, `baseUrl: ${r.url}`));
    const run = join(dir, "run");
    const out = await reinsRun([file, "--project-root", dir, "--out", run, "--json"]);
    expect(out.code, out.stderr.slice(-3000)).toBe(0);
    const summary = JSON.parse(out.stdout) as { engine: unknown; steps: number };
    expect(summary.engine).toEqual({ type: "sglang", server: "sglang", version: "0.5.5", logprobsMode: "temperature" });
    expect(summary.steps).toBe(2);
    const checkpoints = events(run).filter((e) => e.type === "checkpoint");
    const initial = readFileSync(join(policy, "READY"), "utf8").trim();
    const versions = [initial, ...checkpoints.map((c) => c.version as string)];
    expect(
      posts(r)
        .filter((p) => p.path === "/update_weights_from_disk")
        .map((p) => p.body),
    ).toEqual([policy, ...checkpoints.map((c) => c.weightsDir as string)].map((model_path, i) => ({ model_path, weight_version: versions[i] })));
    const stepOf = new Map(jsonl(run, "rollouts.jsonl").map((x: { id: string; step: number }) => [x.id, x.step]));
    const calls = jsonl(run, "calls.jsonl");
    expect(calls.length).toBeGreaterThanOrEqual(8);
    for (const c of calls) expect(c.weightsVersion).toBe(stepOf.get(c.rolloutId) === checkpoints[0].step ? versions[0] : versions[1]);
  }, 300_000);
});
