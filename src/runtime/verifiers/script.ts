/**
 * The script part: a command run in the sandbox after the harness exits, with $REINS_HIDDEN
 * pointing at the task's hidden files. It prints `{"reward": x, "subscores": {...}}` and exits 0.
 * A crash, a hang or garbage output is a verifier error, never a reward of 0.
 */
import type { ResolvedVerifier } from "../../compiler/contract/plan.js";
import type { VerifierProblem } from "./run-checks.js";
import type { WorkspaceReader } from "./workspace.js";

export interface ScriptPart {
  score: number;
  subscores: Record<string, number>;
  exitCode: number | null;
  durationMs: number;
  /** Last lines of stderr, for reports. */
  stderrTail: string;
  error?: VerifierProblem;
}

export type ScriptOutput = { ok: true; reward: number; subscores: Record<string, number> } | { ok: false; code: string; message: string };

function candidates(stdout: string): string[] {
  const t = stdout.trim();
  const lines = t
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith("{"));
  return [t, ...lines.reverse()];
}

/** Finds the reward object: the whole stdout, or its last line that is a JSON object. Pure. */
export function parseScriptOutput(stdout: string): ScriptOutput {
  if (stdout.trim() === "") return { ok: false, code: "ScriptOutputInvalid", message: 'the script printed nothing; it must print {"reward": x}' };
  for (const c of candidates(stdout)) {
    let v: unknown;
    try {
      v = JSON.parse(c);
    } catch {
      continue;
    }
    if (v === null || typeof v !== "object" || Array.isArray(v) || !("reward" in v)) continue;
    const o = v as { reward: unknown; subscores?: unknown };
    if (typeof o.reward !== "number" || !Number.isFinite(o.reward)) {
      return { ok: false, code: "ScriptRewardInvalid", message: `the script's reward is ${JSON.stringify(o.reward)}, not a number` };
    }
    if (o.reward < 0 || o.reward > 1) return { ok: false, code: "ScriptRewardInvalid", message: `the script's reward ${o.reward} is outside [0, 1]` };
    const subscores: Record<string, number> = {};
    if (o.subscores !== null && typeof o.subscores === "object" && !Array.isArray(o.subscores)) {
      for (const [k, s] of Object.entries(o.subscores as Record<string, unknown>)) if (typeof s === "number" && Number.isFinite(s)) subscores[k] = s;
    }
    return { ok: true, reward: o.reward, subscores };
  }
  const head = stdout
    .trim()
    .slice(-120)
    .replace(/[^\x20-\x7e]/g, "?");
  return {
    ok: false,
    code: "ScriptOutputInvalid",
    message: `the script did not print a JSON object with a "reward" (its output ends with ${JSON.stringify(head)})`,
  };
}

function tail(s: string, lines = 5): string {
  return s.trim().split("\n").slice(-lines).join("\n").slice(-1000);
}

export async function runScript(
  script: NonNullable<ResolvedVerifier["script"]>,
  reader: WorkspaceReader,
  opts: { hiddenDir?: string } = {},
): Promise<ScriptPart> {
  const fail = (code: string, message: string, extra: Partial<ScriptPart> = {}): ScriptPart => ({
    score: 0,
    subscores: {},
    exitCode: null,
    durationMs: 0,
    stderrTail: "",
    ...extra,
    error: { code, message },
  });
  if (!reader.exec) return fail("ExecUnavailable", `this workspace (${reader.description}) cannot run the verifier script`);
  const r = await reader.exec({
    argv: script.command,
    timeoutMs: script.timeoutSeconds * 1000,
    ...(opts.hiddenDir !== undefined ? { hiddenDir: opts.hiddenDir } : {}),
  });
  const info = { exitCode: r.exitCode, durationMs: r.durationMs, stderrTail: tail(r.stderr) };
  if (r.spawnError !== undefined) return fail("ScriptNotStarted", `the verifier script could not start: ${r.spawnError}`, info);
  if (r.timedOut) {
    return fail("ScriptTimeout", `the verifier script ran longer than ${script.timeoutSeconds} s; it and every process it started were killed`, info);
  }
  if (r.exitCode !== 0) {
    const why = r.exitCode === null ? `was killed by ${r.signal}` : `exited with status ${r.exitCode}`;
    const err = tail(r.stderr, 2);
    return fail("ScriptCrashed", `the verifier script ${why}${err ? ` (${err.replace(/\n/g, " | ")})` : ""}`, info);
  }
  const out = parseScriptOutput(r.stdout);
  if (!out.ok) return fail(out.code, out.message, info);
  return { score: out.reward, subscores: out.subscores, ...info };
}
