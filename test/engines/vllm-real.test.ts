/**
 * examples/engines/evaluation.yaml for real: `reins eval` from a copy of the project creates the
 * tiny initial policy, starts vLLM's CPU build on it (engine.serve), runs three tasks through
 * reins-agent and stops the server. Then a second server, started the same way, scores the
 * recorded calls: the logprob of every completion token, as a prompt logprob of the prompt plus
 * completion, is the one recorded for it, so the ids in the run are those the server sampled.
 * Needs the scale environment (bash scripts/install-python.sh); REINS_SKIP_SCALE_PYTHON=1 skips
 * it. vLLM takes 1–3 minutes to start on a loaded 2-core machine: the timeouts are generous.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultServePython, startVllmServer } from "../../src/runtime/engines/vllm-server.js";
import { reinsAsync } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const SKIP = process.env.REINS_SKIP_SCALE_PYTHON === "1";
const NOTE = SKIP ? " (skipped: REINS_SKIP_SCALE_PYTHON=1; install vLLM's CPU build with scripts/install-python.sh)" : "";

/** The project's files the example needs, at the same relative places. */
function copyProject(dir: string): string {
  for (const f of ["engines/evaluation.yaml", "engines/model.yaml", "quickstart/family.yaml"]) {
    mkdirSync(join(dir, "examples", f, ".."), { recursive: true });
    cpSync(join("examples", f), join(dir, "examples", f));
  }
  return join(dir, "examples", "engines", "evaluation.yaml");
}

function reinsEval(args: string[]) {
  return reinsAsync(["eval", ...args]);
}

/** Processes whose process group is `pgid` (the server and the engine core it started). */
function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid) out.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return out;
}

interface Call {
  promptIds: number[];
  completionIds: number[];
  completionLogprobs: number[];
}

describe.skipIf(SKIP)(`reins eval with the policy served by a real vLLM that reins starts${NOTE}`, () => {
  it("exit 0, the engine block, no server left; the recorded ids and logprobs are what the server sampled", async () => {
    if (!existsSync(defaultServePython()))
      throw new Error(`${defaultServePython()} is missing: run scripts/install-python.sh (or set REINS_SKIP_SCALE_PYTHON=1)`);
    const dir = tempDir();
    const file = copyProject(dir);
    const run = join(dir, "run");
    const t0 = Date.now();
    // In a copy, the project is the copy: examples/ and the .reins/ its Model names (in reins's own
    // tree examples/ is a library root, and its own .reins/ is allowed to its examples).
    const r = await reinsEval([file, "--project-root", dir, "--out", run, "--json"]);
    const evalSeconds = (Date.now() - t0) / 1000;
    expect(r.code, `${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`).toBe(0);
    const summary = JSON.parse(r.stdout) as { engine: unknown; rollouts: number; infraFailures: number };
    expect(summary.engine).toEqual({ type: "vllm", server: "vllm", version: "0.32.0", logprobsMode: "raw" });
    expect(summary.rollouts).toBe(3);
    expect(summary.infraFailures).toBe(0);
    expect(r.stderr).toMatch(/created the initial policy in .*\.reins\/engines\/policy/);
    expect(existsSync(join(dir, ".reins", "engines", "policy", "READY"))).toBe(true);

    // The server reins started is gone, and so is its engine core.
    const server = JSON.parse(readFileSync(join(run, "vllm-server.json"), "utf8")) as { pid: number; startSeconds: number };
    expect(groupMembers(server.pid)).toEqual([]);
    expect(readFileSync(join(run, "vllm-server.log"), "utf8")).toContain("Application startup complete");

    const calls = readFileSync(join(run, "calls.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Call);
    expect(calls.length).toBeGreaterThanOrEqual(3);
    expect(calls.every((c) => c.completionIds.length > 0 && c.completionIds.length === c.completionLogprobs.length)).toBe(true);

    // A second server on the same weights scores the prompt + completion of each call.
    const policy = join(dir, ".reins", "engines", "policy");
    const t1 = Date.now();
    const second = await startVllmServer({
      serve: { modelPath: policy, maxModelLen: 2048, dtype: "bfloat16", args: [], startTimeoutSeconds: 900 },
      model: "check",
      logFile: join(dir, "second-server.log"),
    });
    const secondStart = (Date.now() - t1) / 1000;
    let worst = 0;
    let tokens = 0;
    try {
      for (const c of calls.slice(0, 4)) {
        const res = await fetch(`${second.baseUrl}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "check", prompt: [...c.promptIds, ...c.completionIds], max_tokens: 1, temperature: 1, prompt_logprobs: 0 }),
          signal: AbortSignal.timeout(300_000),
        });
        expect(res.status).toBe(200);
        const body = (await res.json()) as { choices: { prompt_logprobs: (Record<string, { logprob: number }> | null)[] }[] };
        const scored = body.choices[0]!.prompt_logprobs;
        c.completionIds.forEach((id, i) => {
          const entry = scored[c.promptIds.length + i]?.[String(id)];
          expect(entry, `token ${i} (id ${id}) of a call`).toBeDefined();
          worst = Math.max(worst, Math.abs(entry!.logprob - c.completionLogprobs[i]!));
          tokens++;
        });
      }
    } finally {
      await second.stop();
    }
    expect(groupMembers(second.pid)).toEqual([]);
    // Same weights, same bf16 kernels: a prefill gives the decode steps' logprobs (0 apart when
    // measured; the bound leaves room for another batch shape). A wrong or shifted id is off by
    // tenths: the random policy's logprobs spread over about a nat.
    expect(worst).toBeLessThan(1e-2);
    console.log(
      `vllm-real: server start ${server.startSeconds.toFixed(1)} s, reins eval ${evalSeconds.toFixed(1)} s, second server ${secondStart.toFixed(1)} s, ${tokens} tokens scored, worst |Δlogprob| ${worst.toExponential(2)}`,
    );
  }, 1_800_000);
});
