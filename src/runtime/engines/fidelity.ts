/**
 * The sampling-fidelity guard: reins trains against the logprobs an engine returns, so they must
 * be those of the distribution that sampled each token. Which settings keep them so depends on
 * the engine's logprob mode (the capability probe's `logprobsMode`); reins always sends its own
 * top-k 0, min-p 0 and no penalties, so temperature and top-p are what is left to check.
 */
import { ReinsError } from "../../compiler/contract/problem.js";
import type { EngineInfo } from "./engine.js";

export type FidelityVerdict = { ok: true } | { ok: false; message: string; hint: string };

/** Whether `sampling` through an engine with this probe result returns the sampling distribution's logprobs. */
export function checkSamplingFidelity(
  probe: Pick<EngineInfo, "server" | "logprobsMode" | "logprobsModeFrom">,
  sampling: { temperature: number; topP: number },
): FidelityVerdict {
  const { temperature: t, topP: p } = sampling;
  const where = `${probe.server} returns ${probe.logprobsMode} logprobs (${probe.logprobsModeFrom === "server" ? "the server says so" : probe.logprobsModeFrom === "spec" ? "the Model's engine.logprobsMode says so" : "its default"})`;
  if (probe.logprobsMode === "logits") {
    return {
      ok: false,
      message: `${probe.server} returns logits, not logprobs, so reins cannot learn the probability of the sampled tokens.`,
      hint: "Restart vLLM with --logprobs-mode processed_logprobs (or raw_logprobs with temperature 1 and topP 1).",
    };
  }
  if (t === 0) {
    return {
      ok: false,
      message: "The Model samples greedily (temperature 0): there is no sampling distribution to train against.",
      hint: "Set the Model's sampling.temperature above 0 (1 for the model's own distribution).",
    };
  }
  if (probe.logprobsMode === "raw" && (t !== 1 || p !== 1)) {
    return {
      ok: false,
      message: `${where}, before temperature and top-p, but the Model samples with temperature ${t} and topP ${p}: the logprobs would not be those of the tokens' sampling distribution.`,
      hint:
        probe.server === "vllm"
          ? "Set sampling.temperature 1 and sampling.topP 1, or restart vLLM with --logprobs-mode processed_logprobs (and set the engine's logprobsMode: processed if its /server_info is not served)."
          : "Set sampling.temperature 1 and sampling.topP 1.",
    };
  }
  if (probe.logprobsMode === "temperature" && p !== 1) {
    return {
      ok: false,
      message: `${where}, after temperature but before top-p, but the Model samples with topP ${p}: the logprobs would not be those of the tokens' sampling distribution.`,
      hint: "Set sampling.topP 1 to train through this engine.",
    };
  }
  return { ok: true };
}

/** Refuse to train through an engine whose logprobs are not the sampling distribution's (SamplingUnfaithful). */
export function requireSamplingFidelity(probe: EngineInfo | undefined, sampling: { temperature: number; topP: number }): void {
  if (!probe) return;
  const verdict = checkSamplingFidelity(probe, sampling);
  if (!verdict.ok) throw new ReinsError("SamplingUnfaithful", `Cannot train through this engine: ${verdict.message}`, verdict.hint);
}

/**
 * Everything a training run needs of a probed engine, checked before the first rollout: faithful
 * logprobs (SamplingUnfaithful) and a weight-reload route (EngineNotTrainable).
 */
export function requireTrainable(probe: EngineInfo | undefined, sampling: { temperature: number; topP: number }): void {
  if (!probe) return;
  requireSamplingFidelity(probe, sampling);
  if (!probe.routes.reload) {
    const hint =
      probe.server === "vllm"
        ? "Start vLLM with VLLM_SERVER_DEV_MODE=1, which serves /pause, /collective_rpc and /resume (reins reloads the trainer's weights through them)."
        : probe.server === "sglang"
          ? "Use an SGLang version that serves /update_weights_from_disk."
          : "Train through a vllm or sglang engine; llama-cpp serves evaluations only.";
    throw new ReinsError(
      "EngineNotTrainable",
      `Cannot train through this engine: the ${probe.server}${probe.version ? ` ${probe.version}` : ""} server offers no route to load new weights.`,
      hint,
    );
  }
}
