/**
 * Launching a harness: install it (when it has an npm package), write its config files into a fresh
 * HOME, spawn it in its own process group with stdin closed, and kill the whole group when it runs
 * past its timeout (and after it exits, so nothing it started outlives the rollout).
 */
import { spawn } from "node:child_process";
import { chmod, mkdir, open, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ResolvedHarness } from "../../compiler/contract/plan.js";
import { installHarness, type InstallOptions } from "./install.js";
import { buildLaunchPlan, type LaunchContext, type LaunchPlan, type LaunchRuntime } from "./launch-plan.js";
import { fail, succeed, type Outcome } from "./problem.js";

/** Absolute path of reins-agent's entry script. */
export const REINS_AGENT_PATH = fileURLToPath(new URL("./reins-agent/agent.mjs", import.meta.url));

export interface SpawnOptions {
  timeoutMs: number;
  /** Between SIGTERM and SIGKILL of the group on timeout; default 3 s. */
  graceMs?: number;
  /** Files that receive the harness's stdout/stderr; otherwise the last `captureBytes` are kept in memory. */
  stdoutFile?: string;
  stderrFile?: string;
  captureBytes?: number;
  signal?: AbortSignal;
}

export interface HarnessExit {
  /** null when killed by a signal. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** Aborted through SpawnOptions.signal. */
  aborted: boolean;
  wallMs: number;
  /** Captured output (tails) when no file was given. */
  stdout: string;
  stderr: string;
  /** Set when the process could not be started at all. */
  spawnError?: string;
}

/** Writes the rendered config files into HOME (created fresh by the caller). */
export async function writeHomeFiles(plan: LaunchPlan): Promise<void> {
  await mkdir(plan.home, { recursive: true, mode: 0o700 });
  for (const file of plan.homeFiles) {
    await mkdir(path.dirname(file.path), { recursive: true, mode: 0o700 });
    await writeFile(file.path, file.content, { mode: 0o600 });
    await chmod(file.path, 0o600);
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* the group is already gone */
  }
}

class Tail {
  private text = "";
  constructor(private readonly max: number) {}
  push(chunk: Buffer): void {
    this.text += chunk.toString("utf8");
    if (this.text.length > this.max) this.text = this.text.slice(-this.max);
  }
  toString(): string {
    return this.text;
  }
}

/** Spawns the planned command and waits for it (or for the timeout). Never rejects. */
export async function spawnHarness(plan: LaunchPlan, options: SpawnOptions): Promise<HarnessExit> {
  const started = Date.now();
  const outFile = options.stdoutFile ? await open(options.stdoutFile, "w") : null;
  const errFile = options.stderrFile ? await open(options.stderrFile, "w") : null;
  const stdoutTail = new Tail(options.captureBytes ?? 1 << 20);
  const stderrTail = new Tail(options.captureBytes ?? 1 << 20);
  try {
    return await new Promise<HarnessExit>((resolve) => {
      const child = spawn(plan.argv[0], plan.argv.slice(1), {
        cwd: plan.cwd,
        env: plan.env,
        detached: true,
        stdio: ["ignore", outFile ? outFile.fd : "pipe", errFile ? errFile.fd : "pipe"],
      });
      child.stdout?.on("data", (c: Buffer) => stdoutTail.push(c));
      child.stderr?.on("data", (c: Buffer) => stderrTail.push(c));
      let timedOut = false;
      let aborted = false;
      let hardKill: NodeJS.Timeout | undefined;
      const stop = () => {
        if (child.pid === undefined) return;
        killGroup(child.pid, "SIGTERM");
        hardKill = setTimeout(() => killGroup(child.pid!, "SIGKILL"), options.graceMs ?? 3000);
      };
      const timer = setTimeout(() => {
        timedOut = true;
        stop();
      }, options.timeoutMs);
      const onAbort = () => {
        aborted = true;
        stop();
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      let finished = false;
      const finish = (exitCode: number | null, signal: NodeJS.Signals | null, spawnError?: string) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        if (hardKill) clearTimeout(hardKill);
        options.signal?.removeEventListener("abort", onAbort);
        // Whatever the harness left running in its group (shells, workers) goes with it.
        if (child.pid !== undefined) killGroup(child.pid, "SIGKILL");
        const exit: HarnessExit = {
          exitCode,
          signal,
          timedOut,
          aborted,
          wallMs: Date.now() - started,
          stdout: stdoutTail.toString(),
          stderr: stderrTail.toString(),
        };
        if (spawnError) exit.spawnError = spawnError;
        resolve(exit);
      };
      child.on("error", (e) => finish(null, null, e.message));
      child.on("close", (code, signal) => finish(code, signal));
    });
  } finally {
    await outFile?.close();
    await errFile?.close();
  }
}

export interface PreparedHarness {
  plan: LaunchPlan;
  runtime: LaunchRuntime;
}

/** Installs the harness if needed and builds its launch plan. */
export async function prepareHarness(
  harness: ResolvedHarness,
  ctx: LaunchContext,
  options: { install?: InstallOptions; extraEnv?: Record<string, string> } = {},
): Promise<Outcome<PreparedHarness>> {
  const runtime: LaunchRuntime = {
    pathDirs: [path.dirname(process.execPath)],
    node: process.execPath,
    reinsAgent: REINS_AGENT_PATH,
    extraEnv: options.extraEnv,
  };
  if (harness.install?.npm) {
    const installed = await installHarness(harness.install, options.install);
    if (!installed.ok) return installed;
    runtime.pathDirs = installed.value.pathDirs;
    runtime.node = installed.value.node;
    runtime.bin = installed.value.bin;
  } else if (harness.install?.image) {
    return fail(
      "HarnessNeedsImage",
      `The harness ${harness.name} runs from the image ${harness.install.image}.`,
      "Run it with a container sandbox provider (podman or kubernetes).",
    );
  }
  const plan = buildLaunchPlan(harness, ctx, runtime);
  if (!plan.ok) return plan;
  return succeed({ plan: plan.value, runtime });
}

/** Install, write HOME, spawn, wait: one harness run for one rollout. */
export async function runHarness(
  harness: ResolvedHarness,
  ctx: LaunchContext,
  options: SpawnOptions & { install?: InstallOptions; extraEnv?: Record<string, string> },
): Promise<Outcome<{ exit: HarnessExit; plan: LaunchPlan }>> {
  const workspace = await stat(ctx.workspace).catch(() => null);
  if (!workspace?.isDirectory()) {
    return fail(
      "HarnessWorkspaceMissing",
      `The workspace ${ctx.workspace} is not a directory.`,
      "Materialize the task workspace before launching the harness.",
    );
  }
  const prepared = await prepareHarness(harness, ctx, options);
  if (!prepared.ok) return prepared;
  await writeHomeFiles(prepared.value.plan);
  const exit = await spawnHarness(prepared.value.plan, options);
  return succeed({ exit, plan: prepared.value.plan });
}
