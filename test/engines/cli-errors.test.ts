/**
 * What a researcher sees when the Model's engine does not match its server: `reins eval` stops
 * before any rollout with `error[Code]`, the message and a hint, exit 1, no stack trace.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir, writeSpecs } from "../executor/helpers.js";
import { reinsAsync } from "../reins-cli.js";
import { evaluationWithEngine as evaluation, readFixture, startReplay, type Replay } from "./replay.js";

function reinsEval(file: string, out: string) {
  return reinsAsync(["eval", file, "--out", out, "--quiet"]);
}

let replay: Replay | undefined;
afterEach(async () => {
  await replay?.close();
  replay = undefined;
});

describe("reins eval with a mismatched or absent engine server", () => {
  it("a Model that says vllm where SGLang answers: EngineMismatch with the type to use", async () => {
    replay = await startReplay(readFixture("sglang/sglang-0.5-documented.json").probe);
    const dir = tempDir();
    const r = await reinsEval(writeSpecs(dir, evaluation(`{type: vllm, baseUrl: "${replay.url}", model: m}`)), join(dir, "run"));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[EngineMismatch]: The Model's engine is vllm, but a sglang server answers there.");
    expect(r.stderr).toContain("hint: Set the engine's type to sglang, or point baseUrl at a vllm server.");
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(replay.seen.filter((s) => s.method === "POST")).toEqual([]);
  }, 60_000);

  it("nothing listening at baseUrl: EngineUnreachable, told to start the server", async () => {
    const dir = tempDir();
    const r = await reinsEval(writeSpecs(dir, evaluation(`{type: sglang, baseUrl: "http://127.0.0.1:9", model: m}`)), join(dir, "run"));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[EngineUnreachable]: cannot reach the inference server at http://127.0.0.1:9");
    expect(r.stderr).toMatch(/hint: Check that the inference server is running/);
  }, 60_000);
});
