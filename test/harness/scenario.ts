/**
 * Test helper: one real harness run against the real proxy. Starts the proxy on loopback with a
 * scripted model (or uses a given one), registers a rollout, runs the installed harness headless in
 * a temporary workspace with a fresh HOME and every other host routed to a refusing recorder, then
 * collects the proxy's records. Records and the harness's output go to test-output/harness/ so other
 * tests (trajectories) can reuse them; they are generated at run time and never committed.
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { ResolvedHarness, ResolvedModel, ScriptedTurn } from "../../src/compiler/contract/plan.js";
import type { ProxyHandle } from "../../src/runtime/proxy/api.js";
import type { CallRecord } from "../../src/runtime/records/call-record.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { runHarness, type HarnessExit } from "../../src/runtime/harness/launch.js";
import { startEgressRecorder, type EgressAttempt } from "./egress-recorder.js";
import { REPO_ROOT, loadHarnessSpec, loadProxyExample } from "./harness-spec.js";

export const INSTRUCTION = "Create a file hello.txt containing hi";
export const OUTPUT_DIR = path.join(REPO_ROOT, "test-output", "harness");
const SKIP_REAL_HARNESSES = process.env.REINS_SKIP_REAL_HARNESSES === "1";

/**
 * Whether a harness's tests are skipped: only with REINS_SKIP_REAL_HARNESSES=1, and only for the
 * harnesses installed from npm (reins-agent ships with reins and always runs).
 */
export function skipHarness(harness: string): boolean {
  return SKIP_REAL_HARNESSES && loadHarnessSpec(harness).install?.npm !== undefined;
}

/** Suffix for a describe title that says why it is skipped. */
export function skipNote(harness: string): string {
  return skipHarness(harness) ? ` (skipped: REINS_SKIP_REAL_HARNESSES=1; install with scripts/install-harnesses.sh)` : "";
}

export interface ScenarioOptions {
  /** Harness spec name in specs/harnesses/. */
  harness: string;
  /** Names the output files and the rollout. */
  label: string;
  /** Changes to the shipped spec for this run (e.g. another dialect). */
  adjust?: (harness: ResolvedHarness) => ResolvedHarness;
  /** Scripted turns replacing the example's (examples/proxy/<harness>.yaml). */
  script?: ScriptedTurn[];
  /** A running proxy to use (its model's script applies); otherwise one is started and closed. */
  proxy?: ProxyHandle;
  timeoutMs?: number;
}

export interface ScenarioResult {
  label: string;
  exit: HarnessExit;
  records: CallRecord[];
  /** Content of hello.txt in the workspace, or null when missing. */
  hello: string | null;
  egress: EgressAttempt[];
  stdout: string;
  stderr: string;
  /** Wall time of the harness process. */
  wallMs: number;
}

export function scriptedModel(harness: string, script?: ScriptedTurn[]): ResolvedModel {
  const model = loadProxyExample(harness);
  if (script) model.engine = { type: "scripted", script };
  return model;
}

export async function writeRecords(file: string, records: CallRecord[]): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, records.map((r) => JSON.stringify(r)).join("\n") + (records.length ? "\n" : ""));
}

export async function runScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  const spec = loadHarnessSpec(options.harness);
  const harness = options.adjust ? options.adjust(spec) : spec;
  const proxy = options.proxy ?? (await startProxy({ model: scriptedModel(options.harness, options.script) }));
  const recorder = await startEgressRecorder();
  const dir = await mkdtemp(path.join(os.tmpdir(), `reins-${options.label}-`));
  const workspace = path.join(dir, "workspace");
  const home = path.join(dir, "home");
  await mkdir(workspace, { recursive: true });
  await mkdir(OUTPUT_DIR, { recursive: true });
  const stdoutFile = path.join(OUTPUT_DIR, `${options.label}.stdout.txt`);
  const stderrFile = path.join(OUTPUT_DIR, `${options.label}.stderr.txt`);
  const rolloutId = options.label;
  try {
    const registration = proxy.registerRollout(rolloutId, { callClasses: harness.callClasses });
    const run = await runHarness(
      harness,
      { instruction: INSTRUCTION, workspace, baseUrl: registration.baseUrl, apiKey: registration.apiKey, home },
      { timeoutMs: options.timeoutMs ?? 240_000, extraEnv: recorder.env, stdoutFile, stderrFile },
    );
    if (!run.ok) throw new Error(`${run.problem.code}: ${run.problem.message}\n${run.problem.hint}`);
    const records = proxy.unregisterRollout(rolloutId);
    await writeRecords(path.join(OUTPUT_DIR, `${options.label}.calls.jsonl`), records);
    const helloFile = path.join(workspace, "hello.txt");
    return {
      label: options.label,
      exit: run.value.exit,
      records,
      hello: existsSync(helloFile) ? readFileSync(helloFile, "utf8") : null,
      egress: [...recorder.attempts],
      stdout: readFileSync(stdoutFile, "utf8"),
      stderr: readFileSync(stderrFile, "utf8"),
      wallMs: run.value.exit.wallMs,
    };
  } finally {
    await recorder.close();
    if (!options.proxy) await proxy.close();
    if (process.env.REINS_KEEP_HARNESS_RUNS !== "1") await rm(dir, { recursive: true, force: true });
  }
}

/** A one-line summary of a run for failure messages. */
export function describeRun(run: ScenarioResult): string {
  const calls = run.records.map(
    (r) => `#${r.seq} ${r.callClass} ${r.finishReason}${r.error ? ` (${r.error.kind}: ${r.error.message})` : ""}${r.parse.ok ? "" : ` parse=${r.parse.error}`}`,
  );
  return [
    `exit=${run.exit.exitCode} signal=${run.exit.signal} timedOut=${run.exit.timedOut} wall=${run.wallMs} ms hello=${JSON.stringify(run.hello)}`,
    `calls: ${calls.join("; ") || "none"}`,
    `egress: ${JSON.stringify(run.egress)}`,
    `stderr tail: ${run.stderr.slice(-1500)}`,
    `stdout tail: ${run.stdout.slice(-1500)}`,
  ].join("\n");
}
