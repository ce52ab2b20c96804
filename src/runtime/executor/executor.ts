/**
 * The executor: runs a plan's rollouts with bounded concurrency, against one proxy for the run,
 * recording each finished rollout in the run store. Resumable: rollouts already finished in the
 * store are skipped.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Plan, PlanRollout, ResolvedHarness, ResolvedModel } from "../../compiler/contract/plan.js";
import { ReinsError } from "../../compiler/contract/problem.js";
import { installHarness } from "../harness/install.js";
import { resolveCacheRoot } from "../harness/install-paths.js";
import { REINS_AGENT_PATH } from "../harness/launch.js";
import { checkHarnessVariables, type LaunchRuntime } from "../harness/launch-plan.js";
import { resolvedSecrets, SecretScrubber } from "../harness/secrets.js";
import type { Engine } from "../engines/engine.js";
import type { ProxyHandle } from "../proxy/api.js";
import { startProxy } from "../proxy/server.js";
import type { CallRecord, RolloutResult } from "../records/index.js";
import { createHarnessImageBuilder, HarnessImageError, type HarnessImageBuilder } from "../sandbox/images/build.js";
import { relocate } from "../sandbox/images/harness-image.js";
import { DEFAULT_SANDBOX_IMAGE } from "../sandbox/layout.js";
import type { SandboxMount, SandboxProvider } from "../sandbox/provider.js";
import type { RunStore } from "../store/run-store.js";
import type { Judge } from "../verifiers/judge.js";
import { runRollout, type PreparedHarness, type RolloutContext } from "./rollout.js";

export interface ExecutorOptions {
  plan: Plan;
  store: RunStore;
  provider: SandboxProvider;
  /** Overrides plan.sandbox.concurrency. */
  concurrency?: number;
  /** A ready engine (e.g. the onnx engine the training loop reloads); default from the plan's model. */
  engine?: Engine;
  /** The model the proxy renders with; default the plan's. */
  model?: ResolvedModel;
  judge?: Judge;
  backoffMs?: number;
  onEvent?: (e: { type: string; [k: string]: unknown }) => void;
  signal?: AbortSignal;
  /** Builds harness images when the plan's sandbox asks for them (default: podman on this machine). */
  imageBuilder?: HarnessImageBuilder;
  /** Progress lines (stderr talk): a harness image built or reused. */
  log?: (line: string) => void;
}

export interface Executor {
  /** Run these rollouts (skipping finished ones); resolves with the results of all of them. */
  runRollouts(rollouts: readonly PlanRollout[], step: number): Promise<RolloutResult[]>;
  /** The recorded calls of finished rollouts, without re-reading the store when it can. */
  calls(ids: readonly string[]): CallRecord[];
  readonly proxy?: ProxyHandle;
  close(): Promise<void>;
}

/** How harness files reach sandboxes: mounted from this machine, or built into an image per harness. */
export interface HarnessFilesOptions {
  /** Build each harness that runs from this machine's files into an image on top of `base`. */
  images?: { base: string; builder: HarnessImageBuilder; log?: (line: string) => void };
}

/**
 * Installs the plan's harnesses and lists their mounts (host paths in a plan are absolute), or,
 * with `images`, builds the files each harness runs from (its install, node, reins-agent) into its
 * image, which its sandboxes then run with nothing of this machine mounted but the spec's mounts.
 * A harness with install.image runs from that image. Throws `HarnessVariableUnset` before anything
 * runs when reins's environment lacks a `${VAR}` a harness's env or homeFiles refer to.
 */
export async function prepareHarnesses(harnesses: readonly ResolvedHarness[], o: HarnessFilesOptions = {}): Promise<Map<string, PreparedHarness>> {
  const out = new Map<string, PreparedHarness>();
  const agentDir = dirname(REINS_AGENT_PATH);
  for (const h of harnesses) {
    const variables = checkHarnessVariables(h);
    if (!variables.ok) throw new ReinsError(variables.problem.code, variables.problem.message, variables.problem.hint);
    const runtime: LaunchRuntime = { pathDirs: [dirname(process.execPath)], node: process.execPath, reinsAgent: REINS_AGENT_PATH };
    const own: SandboxMount[] = [{ hostPath: agentDir, sandboxPath: agentDir }];
    const mounts: SandboxMount[] = (h.mounts ?? []).map((m) => ({ hostPath: m.hostPath, sandboxPath: m.sandboxPath }));
    if (h.install?.npm) {
      const installed = await installHarness(h.install);
      if (!installed.ok) throw ReinsError.of(installed.problem);
      runtime.pathDirs = installed.value.pathDirs;
      runtime.node = installed.value.node;
      runtime.bin = installed.value.bin;
      own.push({ hostPath: installed.value.dir, sandboxPath: installed.value.dir });
      const nodeDir = dirname(dirname(installed.value.node));
      if (!installed.value.node.startsWith("/usr/")) own.push({ hostPath: nodeDir, sandboxPath: nodeDir });
    }
    if (h.install?.image) {
      out.set(h.name, { harness: h, runtime, mounts, image: h.install.image });
    } else if (o.images && runsFromHostFiles(h)) {
      const all = [...new Set([...own.map((m) => m.hostPath), runtime.node])];
      const paths = all.filter((p) => !all.some((q) => q !== p && p.startsWith(`${q}/`)));
      const made = await o.images.builder.ensure({ harness: h.name, base: o.images.base, paths }).catch((e: unknown) => {
        throw e instanceof HarnessImageError ? new ReinsError("HarnessImageFailed", `The image of the harness ${h.name}: ${e.message}`, e.hint) : e;
      });
      o.images.log?.(`harness ${h.name}: image ${made.image.name} (${made.built ? `built in ${made.seconds.toFixed(1)} s` : "already built"})`);
      // Files a sandbox would hide (a checkout under /tmp) lie elsewhere in the image: so do their paths.
      const at = (p: string): string => relocate(made.image.inputs, p);
      const placed: LaunchRuntime = {
        ...runtime,
        node: at(runtime.node),
        reinsAgent: at(runtime.reinsAgent),
        pathDirs: runtime.pathDirs.map(at),
        ...(runtime.bin ? { bin: at(runtime.bin) } : {}),
      };
      out.set(h.name, { harness: h, runtime: placed, mounts, image: made.image.name, selfContained: true });
    } else {
      out.set(h.name, { harness: h, runtime, mounts: [...own, ...mounts] });
    }
  }
  return out;
}

/** A harness that runs node, reins-agent or an npm install of this machine (not a plain command). */
function runsFromHostFiles(h: ResolvedHarness): boolean {
  if (h.install?.npm) return true;
  const text = JSON.stringify([h.command, h.env ?? {}, h.knobs ?? {}]);
  return text.includes("{{reinsAgent}}") || text.includes("{{node}}");
}

/** The text fields of call records (error messages, parse details); token ids cannot be scrubbed. */
function scrubCalls(calls: CallRecord[], scrubber: SecretScrubber): CallRecord[] {
  if (scrubber.empty) return calls;
  return calls.map((c) => {
    if (!c.error && !c.parse.detail) return c;
    return {
      ...c,
      ...(c.error ? { error: { ...c.error, message: scrubber.text(c.error.message) } } : {}),
      parse: c.parse.detail !== undefined ? { ...c.parse, detail: scrubber.text(c.parse.detail) } : c.parse,
    };
  });
}

/** A plan whose sandbox takes harness files as images gets a builder of them (or the caller's). */
async function harnessFilesOf(plan: Plan, opts: ExecutorOptions): Promise<HarnessFilesOptions> {
  if (plan.sandbox.harnessFiles !== "image") return {};
  // Its build contexts sit beside the harness cache: hard links, not copies, of the installs.
  const builder =
    opts.imageBuilder ??
    (await createHarnessImageBuilder({ workDir: join(dirname(resolveCacheRoot()), "images") }).catch((e: unknown) => {
      throw e instanceof HarnessImageError ? new ReinsError("HarnessImageFailed", e.message, e.hint) : e;
    }));
  return { images: { base: plan.sandbox.image ?? DEFAULT_SANDBOX_IMAGE, builder, ...(opts.log ? { log: opts.log } : {}) } };
}

export async function createExecutor(opts: ExecutorOptions): Promise<Executor> {
  const { plan, store } = opts;
  const harnesses = await prepareHarnesses(plan.harnesses, await harnessFilesOf(plan, opts));
  const needsModel = plan.harnesses.some((h) => h.dialect !== undefined);
  let proxy: ProxyHandle | undefined;
  if (needsModel) {
    if (!plan.model) throw new Error("plan has model-calling harnesses but no model");
    proxy = await startProxy({
      model: opts.model ?? plan.model,
      ...(opts.engine ? { engine: opts.engine } : {}),
      ...podProxyListen(plan),
    });
  }
  const podProxyUrl = proxy ? podProxyUrlOf(plan, proxy.port) : undefined;
  // What the harnesses' ${VAR} references resolve to at launch never reaches the run directory,
  // the caller's events or the results: each value is written as its reference.
  const scrubber = new SecretScrubber(resolvedSecrets(plan.harnesses));
  const socketDir = mkdtempSync(join(tmpdir(), "reins-sockets-"));
  const ctx: RolloutContext = {
    runId: `run-${plan.hash.slice(7, 19)}`,
    provider: opts.provider,
    ...(proxy ? { proxy } : {}),
    ...(podProxyUrl ? { podProxyUrl } : {}),
    socketDir,
    harnesses,
    tasks: new Map(plan.tasks.map((t) => [t.name, t])),
    retries: plan.sandbox.retries,
    backoffMs: opts.backoffMs ?? 500,
    resources: plan.sandbox.resources,
    ...(plan.sandbox.image ? { image: plan.sandbox.image } : {}),
    ...(opts.judge ? { judge: opts.judge } : {}),
    onEvent: (event) => {
      const e = scrubber.value(event);
      if (e.type === "rollout-started" || e.type === "rollout-retry") store.event(e);
      opts.onEvent?.(e);
    },
    keepOutput: (tryId, output) => store.writeHarnessOutput(tryId, { ...output, stdout: scrubber.text(output.stdout), stderr: scrubber.text(output.stderr) }),
    keepDiff: (tryId, diff) => store.writeWorkspaceDiff(tryId, scrubber.value(diff)),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
  const concurrency = Math.max(1, opts.concurrency ?? plan.sandbox.concurrency);
  // Finished rollouts and their calls, kept in memory: the store is read once (for a resumed run).
  const finished = new Map(store.results().map((r) => [r.id, r]));
  const callsOf = new Map<string, CallRecord[]>();
  let storeCallsRead = false;
  const storeCallsFor = new Set<string>();

  return {
    proxy,
    async runRollouts(rollouts, step) {
      const todo = rollouts.filter((r) => !finished.has(r.id));
      opts.onEvent?.({ type: "step-started", step, total: rollouts.length, skipped: rollouts.length - todo.length });
      store.event({ type: "step-started", step, rollouts: rollouts.length, alreadyFinished: rollouts.length - todo.length });
      let next = 0;
      const worker = async () => {
        while (next < todo.length && !opts.signal?.aborted) {
          const r = todo[next++]!;
          const ran = await runRollout(r, step, ctx);
          const result = scrubber.value(ran.result);
          const calls = scrubCalls(ran.calls, scrubber);
          if (result.error?.code === "Interrupted") return;
          store.finish(result, calls);
          callsOf.set(r.id, calls);
          store.event({ type: "rollout-finished", rollout: r.id, status: result.status, reward: result.reward, tries: result.tries });
          finished.set(r.id, result);
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, todo.length) }, worker));
      store.event({ type: "step-finished", step });
      return rollouts.map((r) => finished.get(r.id)).filter((x): x is RolloutResult => x !== undefined);
    },
    calls(ids) {
      if (!storeCallsRead && ids.some((id) => finished.has(id) && !callsOf.has(id))) {
        storeCallsRead = true;
        for (const c of store.calls()) {
          const id = c.rolloutId;
          if (callsOf.has(id) && !storeCallsFor.has(id)) continue;
          storeCallsFor.add(id);
          const list = callsOf.get(id) ?? [];
          list.push(c);
          callsOf.set(id, list);
        }
      }
      return ids.flatMap((id) => callsOf.get(id) ?? []);
    },
    async close() {
      await proxy?.close();
      rmSync(socketDir, { recursive: true, force: true });
    },
  };
}

/** Where the proxy listens when sandbox pods reach it (kubernetes.proxy): the address given, or every address behind a Service. */
function podProxyListen(plan: Plan): { host?: string; port?: number } {
  const p = plan.sandbox.provider === "kubernetes" ? plan.sandbox.kubernetes?.proxy : undefined;
  if (!p) return {};
  return { host: p.address ?? "0.0.0.0", ...(p.port !== undefined ? { port: p.port } : {}) };
}

/** The proxy's URL as sandbox pods see it. */
function podProxyUrlOf(plan: Plan, port: number): string | undefined {
  const p = plan.sandbox.provider === "kubernetes" ? plan.sandbox.kubernetes?.proxy : undefined;
  if (!p) return undefined;
  return `http://${p.service ?? p.address}:${p.port ?? port}`;
}
