/**
 * `reins eval` with the policy served by a vllm engine: reins-agent runs in a local sandbox and
 * calls the proxy, the proxy completes through a replay of vLLM 0.32.0 on loopback that samples
 * a tool call and then "done". The evaluation passes, every call records exactly the ids and
 * logprobs the server sampled, and the probe lands in the outcome and in manifest.json.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ScriptedTurn } from "../../src/compiler/contract/plan.js";
import { runEvaluation } from "../../src/runtime/control/evaluation.js";
import { createEngine } from "../../src/runtime/engines/registry.js";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import { RunStore } from "../../src/runtime/store/run-store.js";
import { planOf, tempDir, writeSpecs } from "../executor/helpers.js";
import { scriptedModel } from "../proxy/helpers.js";
import { evaluationWithEngine, readFixture, startReplay, type Replay } from "./replay.js";

const fx = readFixture("vllm/vllm-0.32.0.json");
const TURNS: ScriptedTurn[] = [{ text: "Writing it.", toolCalls: [{ name: "write_file", arguments: { path: "hello.txt", content: "hi" } }] }, { text: "done" }];

/** The token ids of each turn as the Qwen3 output format renders them (what the server "samples"). */
async function sampledIds(): Promise<number[][]> {
  const model = scriptedModel(TURNS);
  const engine = await createEngine(model.engine, { model, runtime: await loadModelRuntime(model) });
  const out: number[][] = [];
  for (let seq = 0; seq < TURNS.length; seq++)
    out.push((await engine.generate({ promptIds: [1], sampling: { temperature: 1, topP: 1, maxTokens: 512, stopIds: [] }, rolloutId: "x", try: 1, seq })).ids);
  return out;
}

let replay: Replay | undefined;
afterEach(async () => {
  await replay?.close();
  replay = undefined;
});

describe("reins eval through a vllm engine (replayed vLLM 0.32.0)", () => {
  it("passes the task; calls hold the server's ids and logprobs; the engine is in the outcome and manifest.json", async () => {
    const turns = await sampledIds();
    replay = await startReplay(fx.probe);
    let call = 0;
    replay.answer = (path, body) => {
      if (path !== "/v1/completions") return undefined;
      const ids = turns[Math.min(call++, turns.length - 1)]!;
      const logprobs = ids.map((_, i) => -0.125 * (i + 1));
      const last = ids[ids.length - 1]!;
      const choice = {
        index: 0,
        text: "",
        logprobs: { text_offset: ids.map(() => 0), token_logprobs: logprobs, tokens: ids.map((id) => `token_id:${id}`), top_logprobs: [] },
        finish_reason: "stop",
        stop_reason: last,
        token_ids: ids,
        prompt_token_ids: body.prompt,
      };
      return body.stream ? { sse: [{ choices: [choice] }, "[DONE]"] } : { json: { ...fx.completion.response, choices: [choice] } };
    };
    const dir = tempDir();
    const file = writeSpecs(dir, evaluationWithEngine(`{type: vllm, baseUrl: "${replay.url}/v1", model: tiny/qwen3_hd32}`));
    const plan = planOf(file);
    const store = RunStore.open(join(dir, "run"), plan, { resume: false }).store!;
    let outcome;
    try {
      outcome = await runEvaluation({ plan, store });
    } finally {
      store.close();
    }
    expect(outcome.engine).toEqual({ type: "vllm", server: "vllm", version: "0.32.0", logprobsMode: "raw" });
    expect(outcome.passAt["1"]).toBe(1);
    const manifest = JSON.parse(readFileSync(join(store.dir, "manifest.json"), "utf8"));
    expect(manifest.engine).toMatchObject({
      server: "vllm",
      version: "0.32.0",
      logprobsMode: "raw",
      logprobsModeFrom: "server",
      routes: { reload: "/collective_rpc" },
    });
    expect(manifest.planHash).toBe(plan.hash);
    const calls = readFileSync(join(store.dir, "calls.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(calls.map((c) => c.completionIds)).toEqual(turns);
    expect(calls.map((c) => c.completionLogprobs)).toEqual(turns.map((ids) => ids.map((_, i) => -0.125 * (i + 1))));
    expect(calls.map((c) => c.weightsVersion)).toEqual(["tiny/qwen3_hd32", "tiny/qwen3_hd32"]);
  }, 120_000);
});
