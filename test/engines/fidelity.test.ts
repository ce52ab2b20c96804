/**
 * The sampling-fidelity guard: training is refused exactly when the logprobs an engine returns
 * are not those of the distribution that sampled the tokens, for each engine's logprob mode.
 */
import { describe, expect, it } from "vitest";
import { ReinsError } from "../../src/compiler/contract/problem.js";
import type { EngineInfo } from "../../src/runtime/engines/engine.js";
import { checkSamplingFidelity, requireSamplingFidelity, requireTrainable } from "../../src/runtime/engines/fidelity.js";

const probe = (server: EngineInfo["server"], logprobsMode: EngineInfo["logprobsMode"], from: EngineInfo["logprobsModeFrom"] = "default"): EngineInfo => ({
  type: server === "llama.cpp" ? "llama-cpp" : server,
  server,
  version: null,
  logprobsMode,
  logprobsModeFrom: from,
  routes: { generate: "/" },
});
const ok = (p: EngineInfo, temperature: number, topP: number) => checkSamplingFidelity(p, { temperature, topP }).ok;

describe("checkSamplingFidelity", () => {
  it("raw logprobs (vLLM's default): faithful only at temperature 1 and topP 1", () => {
    const vllm = probe("vllm", "raw", "server");
    expect(ok(vllm, 1, 1)).toBe(true);
    expect(ok(vllm, 0.7, 1)).toBe(false);
    expect(ok(vllm, 1, 0.95)).toBe(false);
    expect(ok(vllm, 1.3, 1)).toBe(false);
  });

  it("temperature-scaled logprobs (SGLang's default): any temperature, but topP must be 1", () => {
    const sglang = probe("sglang", "temperature");
    expect(ok(sglang, 0.6, 1)).toBe(true);
    expect(ok(sglang, 1, 0.9)).toBe(false);
  });

  it("processed logprobs (vLLM processed_logprobs, llama.cpp post-sampling): any temperature and topP", () => {
    expect(ok(probe("vllm", "processed", "spec"), 0.6, 0.9)).toBe(true);
    expect(ok(probe("llama.cpp", "processed"), 0.8, 0.95)).toBe(true);
  });

  it("logits instead of logprobs, and greedy sampling, are never trainable", () => {
    expect(ok(probe("vllm", "logits", "server"), 1, 1)).toBe(false);
    expect(ok(probe("vllm", "processed"), 0, 1)).toBe(false);
  });

  it("the refusal says what the engine returns, who says so, and how to fix it", () => {
    const verdict = checkSamplingFidelity(probe("vllm", "raw", "default"), { temperature: 0.7, topP: 0.9 });
    expect(verdict).toEqual({
      ok: false,
      message:
        "vllm returns raw logprobs (its default), before temperature and top-p, but the Model samples with temperature 0.7 and topP 0.9: the logprobs would not be those of the tokens' sampling distribution.",
      hint: expect.stringMatching(/--logprobs-mode processed_logprobs/),
    });
    const err = (() => {
      try {
        requireSamplingFidelity(probe("vllm", "raw", "default"), { temperature: 0.7, topP: 0.9 });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ReinsError);
    expect(err).toMatchObject({ code: "SamplingUnfaithful", message: expect.stringMatching(/^Cannot train through this engine: vllm returns raw logprobs/) });
    expect(() => requireSamplingFidelity(probe("sglang", "temperature"), { temperature: 0.7, topP: 1 })).not.toThrow();
    expect(() => requireSamplingFidelity(undefined, { temperature: 0.7, topP: 0.9 })).not.toThrow();
  });

  it("training also needs a reload route: a vLLM without dev routes is refused before any rollout, with the flag that adds them", () => {
    const noRoutes = probe("vllm", "raw", "server");
    expect(() => requireTrainable(noRoutes, { temperature: 1, topP: 1 })).toThrow(
      expect.objectContaining({ code: "EngineNotTrainable", hint: expect.stringMatching(/VLLM_SERVER_DEV_MODE=1/) }),
    );
    expect(() =>
      requireTrainable({ ...noRoutes, routes: { generate: "/v1/completions", reload: "/collective_rpc" } }, { temperature: 1, topP: 1 }),
    ).not.toThrow();
    expect(() => requireTrainable({ ...noRoutes, routes: { generate: "/v1/completions", reload: "/collective_rpc" } }, { temperature: 0.6, topP: 1 })).toThrow(
      expect.objectContaining({ code: "SamplingUnfaithful" }),
    );
  });
});
