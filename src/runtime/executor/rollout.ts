/**
 * One rollout, end to end: create sandbox → workspace → harness (with the proxy's env) → wait →
 * stop the sandbox's processes → snapshot of the workspace → destroy → verifier (commands in a
 * fresh sandbox, see sandbox-reader.ts) → reward. One `timeoutSeconds` covers a whole try from sandbox creation on;
 * at expiry the harness's whole process tree is killed. Infrastructure failures (sandbox could not
 * be created or died, harness crashed before its first model call, engine unreachable) are retried
 * with backoff and never become a reward; task failures are rewards.
 */
import { join } from "node:path";
import type { Code } from "../../compiler/contract/codes.js";
import type { PlanRollout, ResolvedHarness, ResolvedTask } from "../../compiler/contract/plan.js";
import { isReinsError, ReinsError } from "../../compiler/contract/problem.js";
import type { LaunchRuntime } from "../harness/launch-plan.js";
import { buildLaunchPlan } from "../harness/launch-plan.js";
import type { ProxyHandle } from "../proxy/api.js";
import type { Sandbox, SandboxMount, SandboxProvider } from "../sandbox/provider.js";
import { createSocketBridge, type SocketBridge } from "../sandbox/socket-bridge.js";
import { HARNESS_OUTPUT_BYTES, tryIdOf, type HarnessOutput } from "../store/run-store.js";
import type { Judge } from "../verifiers/judge.js";
import type { VerifierResult } from "../verifiers/verify.js";
import type { CallRecord, RolloutResult, RolloutStatus } from "../records/index.js";
import type { RolloutMcp } from "../records/rollout-result.js";
import { mcpMounts } from "../mcp/mounts.js";
import { McpRelayError } from "../mcp/relay-error.js";
import type { RolloutServers } from "../mcp/rollout-servers.js";
import { snapshotWorkspace, verifySnapshot, type WorkspaceSnapshot } from "./sandbox-reader.js";
import { readWorkspaceDiff, type WorkspaceDiff } from "./workspace-diff.js";

export interface PreparedHarness {
  harness: ResolvedHarness;
  runtime: LaunchRuntime;
  mounts: SandboxMount[];
  /** The harness's own image (install.image, or the one built from its files); else the sandbox's. */
  image?: string;
  /** The image carries node, the harness and reins-agent: nothing of this machine is mounted but `mounts`. */
  selfContained?: boolean;
}

export interface RolloutContext {
  runId: string;
  provider: SandboxProvider;
  proxy?: ProxyHandle;
  /** The proxy's URL as sandbox pods reach it (kubernetes). */
  podProxyUrl?: string;
  /** Directory for per-rollout proxy sockets. */
  socketDir: string;
  harnesses: ReadonlyMap<string, PreparedHarness>;
  tasks: ReadonlyMap<string, ResolvedTask>;
  /** Infrastructure retries after the first try. */
  retries: number;
  backoffMs: number;
  sandboxTimeoutSeconds?: number;
  resources?: { cpu: string; memoryMiB: number };
  image?: string;
  judge?: Judge;
  onEvent?: (e: { type: string; [k: string]: unknown }) => void;
  /** Keeps what the harness of one try printed (the run directory's harness-output/). */
  keepOutput?: (tryId: string, output: HarnessOutput) => void;
  /** Keeps the try's workspace diff, the task's files → what the verifier read (workspace-diff/). */
  keepDiff?: (tryId: string, diff: WorkspaceDiff) => void;
  signal?: AbortSignal;
}

/** An infrastructure failure of one try: retried, never a reward. */
class InfraFailure extends ReinsError {
  constructor(code: Code, message: string) {
    super(code, message);
  }
}

interface TryOutcome {
  status: RolloutStatus;
  reward: number | null;
  passed: boolean;
  phases: Record<string, number>;
  harnessExit: RolloutResult["harnessExit"];
  verifier: VerifierResult | null;
  calls: CallRecord[];
  error?: { code: string; message: string };
  mcp?: RolloutMcp;
}

export async function runRollout(r: PlanRollout, step: number, ctx: RolloutContext): Promise<{ result: RolloutResult; calls: CallRecord[] }> {
  const started = Date.now();
  const task = ctx.tasks.get(r.task);
  const prepared = ctx.harnesses.get(r.harness);
  if (!task || !prepared) throw new Error(`plan inconsistency: ${r.task}/${r.harness}`);
  const retries: { code: string; message: string }[] = [];
  let outcome: TryOutcome | undefined;
  let tries = 0;
  for (;;) {
    tries++;
    // The try's own key: its proxy path, socket and sandbox. Records carry r.id and the try number.
    const tryId = tryIdOf(r.id, tries);
    ctx.onEvent?.({ type: "rollout-started", rollout: r.id, try: tries });
    try {
      outcome = await runTry(tryId, { rolloutId: r.id, try: tries }, task, prepared, ctx);
      break;
    } catch (err) {
      // A full disk stops the run at once: no retry can record anything, and it is nobody's try.
      if (isReinsError(err) && err.code === "DiskFull") throw err;
      const infra =
        err instanceof InfraFailure
          ? err
          : isReinsError(err)
            ? new InfraFailure(err.code, err.message)
            : new InfraFailure("InternalError", (err as Error)?.stack ?? String(err));
      retries.push({ code: infra.code, message: infra.message });
      ctx.onEvent?.({ type: "rollout-retry", rollout: r.id, try: tries, code: infra.code, message: infra.message });
      if (tries > ctx.retries || ctx.signal?.aborted) {
        outcome = {
          status: "infra-failed",
          reward: null,
          passed: false,
          phases: {},
          harnessExit: null,
          verifier: null,
          calls: [],
          error: { code: infra.code, message: infra.message },
        };
        break;
      }
      await sleep(ctx.backoffMs * 2 ** (tries - 1));
    }
  }
  const weightsVersion = outcome.calls.find((c) => c.weightsVersion)?.weightsVersion;
  const result: RolloutResult = {
    id: r.id,
    step,
    task: r.task,
    harness: r.harness,
    pair: r.pair,
    attempt: r.attempt,
    category: task.category,
    status: outcome.status,
    reward: outcome.reward,
    passed: outcome.passed,
    tries,
    durationMs: Date.now() - started,
    phases: outcome.phases,
    calls: outcome.calls.length,
    harnessExit: outcome.harnessExit,
    verifier: outcome.verifier,
    retries,
    finishedAt: new Date().toISOString(),
    ...(outcome.error ? { error: outcome.error } : {}),
    ...(weightsVersion ? { weightsVersion } : {}),
    ...(outcome.mcp ? { mcp: outcome.mcp } : {}),
  };
  ctx.onEvent?.({ type: "rollout-finished", rollout: r.id, status: result.status, reward: result.reward, passed: result.passed });
  return { result, calls: outcome.calls };
}

async function runTry(
  tryId: string,
  identity: { rolloutId: string; try: number },
  task: ResolvedTask,
  prepared: PreparedHarness,
  ctx: RolloutContext,
): Promise<TryOutcome> {
  const { harness, runtime, mounts } = prepared;
  const timeoutMs = task.timeoutSeconds * 1000;
  const t0 = Date.now();
  const deadline = t0 + timeoutMs;
  const phases: Record<string, number> = {};
  const usesModel = harness.dialect !== undefined && ctx.proxy !== undefined;
  let sandbox: Sandbox | undefined;
  let bridge: SocketBridge | undefined;
  let calls: CallRecord[] = [];
  let registered = false;
  let snapshot: WorkspaceSnapshot | undefined;
  // The try's MCP servers: the task's (the plan's first), then the harness's; fresh for this try.
  const mcpServers = [...(task.mcpServers ?? []), ...(harness.mcpServers ?? [])];
  let servers: RolloutServers | undefined;
  let mcp: RolloutMcp | undefined;
  try {
    let apiKey = "none";
    if (usesModel) {
      const reg = ctx.proxy!.registerRollout(tryId, { ...identity, harness: harness.name, callClasses: harness.callClasses });
      registered = true;
      apiKey = reg.apiKey;
      bridge = await createSocketBridge(join(ctx.socketDir, `${tryId}.sock`), "127.0.0.1", ctx.proxy!.port);
    }
    const create = ctx.provider.create({
      id: tryId,
      runId: ctx.runId,
      task: task.name,
      harness: harness.name,
      network: usesModel ? "proxy-only" : "none",
      ...(bridge ? { proxySocketPath: bridge.path } : {}),
      // Pods get the proxy's URL (their run's NetworkPolicy allows it); only a model-calling one uses it.
      ...(ctx.podProxyUrl ? { proxyUrl: ctx.podProxyUrl } : {}),
      // Servers in the sandbox, and reins-agent's MCP client, read the MCP SDK from reins's node_modules.
      mounts: mcpServers.length > 0 ? [...mounts, ...mcpMounts()] : mounts,
      timeoutSeconds: task.timeoutSeconds,
      ...((prepared.image ?? ctx.image) ? { image: prepared.image ?? ctx.image } : {}),
      ...(prepared.selfContained ? { selfContained: true } : {}),
      ...(ctx.resources ? { resources: ctx.resources } : {}),
    });
    sandbox = await withDeadline(
      create,
      deadline,
      () => new InfraFailure("SandboxCreateTimeout", `The sandbox was not ready within the task's ${task.timeoutSeconds} s.`),
      (s) => void s.destroy(),
    );
    phases.createMs = Date.now() - t0;

    let t = Date.now();
    await sandbox.writeFiles(
      task.files.map((f) => ({ path: f.path, content: f.encoding === "base64" ? Buffer.from(f.content, "base64") : f.content, mode: f.mode })),
    );
    const baseUrl = usesModel ? `${sandbox.proxyUrl}/r/${tryId}` : "http://127.0.0.1:9/unused";
    if (mcpServers.length > 0) {
      if (!usesModel)
        throw new InfraFailure("McpUnsupportedByHarness", `The harness ${harness.name} calls no model, so it cannot reach MCP servers through the proxy.`);
      t = Date.now();
      // The MCP SDK loads with the first rollout that has servers, not with every run.
      const { startRolloutServers } = await import("../mcp/rollout-servers.js");
      servers = await startRolloutServers({
        servers: mcpServers,
        sandbox,
        createBeside: (s) => createBesideSandbox(tryId, s.name, task, harness.name, ctx),
        startedAt: t0,
        deadline,
      }).catch((e: unknown) => {
        throw e instanceof McpRelayError ? new InfraFailure(e.code, e.message) : e;
      });
      ctx.proxy!.attachMcp(tryId, (name, req, res) => servers!.handle(name, req, res));
      phases.mcpStartMs = Date.now() - t;
    }
    const launch = buildLaunchPlan(
      harness,
      {
        instruction: task.instruction,
        workspace: sandbox.workspacePath,
        baseUrl,
        apiKey,
        home: sandbox.homePath,
        ...(servers ? { mcpServers: servers.urls(baseUrl) } : {}),
      },
      runtime,
    );
    if (!launch.ok) throw new InfraFailure(launch.problem.code, launch.problem.message);
    if (launch.value.homeFiles.length > 0) await sandbox.writeFiles(launch.value.homeFiles.map((f) => ({ path: f.path, content: f.content })));
    phases.workspaceMs = Date.now() - t;

    t = Date.now();
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new InfraFailure("SandboxCreateTimeout", "No time was left for the harness after the sandbox was created.");
    const proc = sandbox.spawn(launch.value.argv, { cwd: launch.value.cwd, env: launch.value.env, timeoutMs: remaining, maxOutputBytes: HARNESS_OUTPUT_BYTES });
    const onAbort = () => void proc.kill();
    ctx.signal?.addEventListener("abort", onAbort, { once: true });
    const exit = await proc.wait().finally(() => ctx.signal?.removeEventListener("abort", onAbort));
    // From here (or from the deadline, if the harness ran past it) an MCP server that ends is no crash.
    const harnessEndedAt = Math.min(Date.now(), deadline);
    phases.harnessMs = Date.now() - t;
    ctx.keepOutput?.(tryId, exit);
    const harnessExit = { code: exit.exitCode, signal: exit.signal, timedOut: exit.timedOut };
    if (ctx.signal?.aborted) throw new InfraFailure("Interrupted", "The run was interrupted.");
    if (!(await sandbox.alive())) throw new InfraFailure("SandboxDied", "The sandbox died while the harness ran.");
    if (registered) {
      await ctx.proxy!.settle(tryId);
      calls = ctx.proxy!.records(tryId);
    }
    if (servers) {
      const crashed = servers.failure(harnessEndedAt);
      if (crashed) throw new InfraFailure(crashed.code, crashed.message);
      mcp = servers.record();
    }
    const failed = exit.exitCode !== 0 && !exit.timedOut;
    if (usesModel && failed && calls.length === 0) {
      const where = ctx.keepOutput ? ` (its whole output: harness-output/${tryId}.stderr and .stdout in the run directory)` : "";
      throw new InfraFailure(
        "HarnessCrashedEarly",
        `The harness exited with ${exit.exitCode ?? exit.signal} before its first model call: ${tail(exit.stderr)}${where}`,
      );
    }
    if (usesModel && failed && calls.some((c) => c.error?.kind === "engine")) {
      throw new InfraFailure(
        "EngineUnavailable",
        `The inference engine failed during the rollout: ${calls.find((c) => c.error?.kind === "engine")!.error!.message}`,
      );
    }

    // Nothing of the harness survives into verification: its processes are killed before the
    // snapshot, its sandbox is gone before the verifier runs, and commands get a fresh one.
    t = Date.now();
    snapshot = await snapshotWorkspace(sandbox);
    await sandbox.destroy().catch(() => undefined);
    const verifier = await verifySnapshot(snapshot, task, {
      rollout: identity.rolloutId,
      ...(mcp ? { mcpCalls: mcp.calls } : {}),
      createSandbox: () => createVerifierSandbox(tryId, task, harness.name, ctx),
      ...(ctx.judge ? { judge: ctx.judge } : {}),
    });
    phases.verifyMs = Date.now() - t;
    // For the reader only: a diff that cannot be made is left out, never a failure of the try.
    if (ctx.keepDiff) {
      const diff = await readWorkspaceDiff(task, snapshot.dir, sandbox.workspacePath).catch(() => undefined);
      if (diff) ctx.keepDiff(tryId, diff);
    }
    if (exit.timedOut) {
      return {
        status: "timeout",
        reward: 0,
        passed: false,
        phases,
        harnessExit,
        verifier,
        calls,
        ...(mcp ? { mcp } : {}),
        error: { code: "RolloutTimeout", message: `The harness ran past the task's ${task.timeoutSeconds} s and was killed.` },
      };
    }
    if (verifier.status === "error") {
      return {
        status: "verifier-error",
        reward: null,
        passed: false,
        phases,
        harnessExit,
        verifier,
        calls,
        ...(mcp ? { mcp } : {}),
        error: { code: verifier.error?.code ?? "VerifierError", message: verifier.error?.message ?? "The verifier failed." },
      };
    }
    return { status: "ok", reward: verifier.reward, passed: verifier.passed, phases, harnessExit, verifier, calls, ...(mcp ? { mcp } : {}) };
  } finally {
    const t = Date.now();
    if (servers && registered) ctx.proxy!.attachMcp(tryId, undefined);
    await servers?.close().catch(() => undefined);
    await sandbox?.destroy().catch(() => undefined);
    await snapshot?.remove().catch(() => undefined);
    await bridge?.close().catch(() => undefined);
    if (registered) {
      const all = ctx.proxy!.unregisterRollout(tryId);
      if (all.length > calls.length) calls.splice(0, calls.length, ...all);
    }
    phases.destroyMs = Date.now() - t;
  }
}

/**
 * The fresh sandbox a verifier's commands run in: same provider, image and resources, no network,
 * no harness mounts, the verifier's own uid where the provider can choose one. Bounded like the
 * try's first sandbox by the task's timeout; a failure is an infrastructure failure (retried).
 */
async function createVerifierSandbox(tryId: string, task: ResolvedTask, harness: string, ctx: RolloutContext): Promise<Sandbox> {
  const seconds = Math.max(task.timeoutSeconds, task.verifier.script?.timeoutSeconds ?? 0);
  const create = ctx.provider.create({
    id: `${tryId}.verify`,
    runId: ctx.runId,
    task: task.name,
    harness,
    role: "verifier",
    network: "none",
    mounts: [],
    timeoutSeconds: seconds,
    ...(ctx.image ? { image: ctx.image } : {}),
    ...(ctx.resources ? { resources: ctx.resources } : {}),
  });
  return withDeadline(
    create,
    Date.now() + task.timeoutSeconds * 1000,
    () => new InfraFailure("SandboxCreateTimeout", `The verifier's sandbox was not ready within the task's ${task.timeoutSeconds} s.`),
    (s) => void s.destroy(),
  );
}

/** A sandbox of its own for an MCP server that runs beside the rollout's: no network, the MCP mounts, the agent's uid. */
async function createBesideSandbox(tryId: string, server: string, task: ResolvedTask, harness: string, ctx: RolloutContext): Promise<Sandbox> {
  const create = ctx.provider.create({
    id: `${tryId}.mcp-${server}`,
    runId: ctx.runId,
    task: task.name,
    harness,
    network: "none",
    mounts: mcpMounts(),
    timeoutSeconds: task.timeoutSeconds,
    ...(ctx.image ? { image: ctx.image } : {}),
    ...(ctx.resources ? { resources: ctx.resources } : {}),
  });
  return withDeadline(
    create,
    Date.now() + task.timeoutSeconds * 1000,
    () => new InfraFailure("SandboxCreateTimeout", `The sandbox of the MCP server ${server} was not ready within the task's ${task.timeoutSeconds} s.`),
    (s) => void s.destroy(),
  );
}

function tail(s: string): string {
  const t = s.trim().split("\n").slice(-3).join(" | ");
  return t.length > 300 ? `…${t.slice(-300)}` : t || "(no output)";
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function withDeadline<T>(p: Promise<T>, deadline: number, onTimeout: () => Error, cleanupLate: (v: T) => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        timedOut = true;
        reject(onTimeout());
      },
      Math.max(0, deadline - Date.now()),
    );
  });
  p.then((v) => {
    if (timedOut) cleanupLate(v);
  }).catch(() => undefined);
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
