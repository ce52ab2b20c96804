/**
 * Test helper: a sandbox provider that hands out the real provider's sandboxes, and around the
 * one command the executor starts in each (the harness) runs a probe in the same sandbox, as the
 * same user, with the harness's own environment: once before the harness starts and once after it
 * exits. The probe tries what a harness (or the policy driving it) might try: write into the
 * harness's install and the other mounts, reach hosts other than the proxy, call the proxy with
 * no key, a forged key or the previous rollout's key. The harness itself runs untouched.
 */
import type { ExecOptions, ExecResult, Sandbox, SandboxProcess, SandboxProvider, SandboxSpec } from "../../src/runtime/sandbox/provider.js";

/** What the probe saw in one sandbox at one moment. */
export interface ProbeReport {
  uid: number;
  /** Files under HOME, relative, sorted (at most 500). */
  home: string[];
  /** Content of the files under HOME of at most 64 KiB (before the harness only). */
  homeFiles: Record<string, string>;
  /** Per mount point: "written" or the error code of the attempt to create a file in it. */
  mountWrites: Record<string, string>;
  /** Per "host:port": "connected" or the error code of the attempt. */
  connections: Record<string, string>;
  /** Result of resolving a public name: an address or the error code. */
  dns: string;
  /** Per key label: the HTTP status of POST <proxy>/r/<this rollout>/v1/messages/count_tokens, or the error. */
  proxy: Record<string, number | string>;
}

export interface HarnessLaunch {
  /** The try's id (the proxy path of the rollout's try). */
  tryId: string;
  spec: SandboxSpec;
  argv: string[];
  env: Record<string, string>;
  /** The per-rollout proxy key found in the harness's environment. */
  apiKey?: string;
  before?: ProbeReport;
  after?: ProbeReport;
  /** The probe's own failure (it could not run or print its report). */
  probeError?: string;
  exit?: ExecResult;
}

const PROBE = `
const fs = require("node:fs"), path = require("node:path"), net = require("node:net"), dns = require("node:dns");
const env = process.env;
const out = { uid: process.getuid(), home: [], homeFiles: {}, mountWrites: {}, connections: {}, dns: "", proxy: {} };
const walk = (dir, rel) => {
  let entries = [];
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const e of entries) {
    if (out.home.length >= 500) return;
    const r = rel ? rel + "/" + e.name : e.name;
    if (e.isDirectory()) walk(path.join(dir, e.name), r);
    else {
      out.home.push(r);
      if (env.PROBE_READ_HOME === "1" && e.isFile()) {
        try { const b = fs.readFileSync(path.join(dir, e.name)); if (b.length <= 65536) out.homeFiles[r] = b.toString("utf8"); } catch {}
      }
    }
  }
};
walk(env.HOME, "");
out.home.sort();
for (const m of (env.PROBE_MOUNTS || "").split(":").filter(Boolean)) {
  try { fs.writeFileSync(path.join(m, ".reins-probe-" + env.PROBE_ID), "x"); out.mountWrites[m] = "written"; }
  catch (e) { out.mountWrites[m] = e.code || String(e); }
}
const connect = (target) => new Promise((resolve) => {
  const i = target.lastIndexOf(":");
  const s = net.connect({ host: target.slice(0, i), port: Number(target.slice(i + 1)) });
  const done = (v) => { clearTimeout(t); s.destroy(); resolve(v); };
  const t = setTimeout(() => done("timeout"), 4000);
  s.once("connect", () => done("connected"));
  s.once("error", (e) => done(e.code || String(e)));
});
const ask = async (key) => {
  try {
    const headers = { "content-type": "application/json" };
    if (key) headers["x-api-key"] = key;
    const r = await fetch(env.PROBE_PROXY + "/r/" + encodeURIComponent(env.PROBE_ID) + "/v1/messages/count_tokens", {
      method: "POST", headers, body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }), signal: AbortSignal.timeout(10000),
    });
    await r.text();
    return r.status;
  } catch (e) { return String(e.cause?.code || e.code || e); }
};
(async () => {
  for (const t of (env.PROBE_TARGETS || "").split(",").filter(Boolean)) out.connections[t] = await connect(t);
  out.dns = await new Promise((resolve) => dns.lookup("example.com", (e, a) => resolve(e ? e.code || String(e) : a)));
  const keys = JSON.parse(env.PROBE_KEYS || "{}");
  for (const [label, key] of Object.entries(keys)) out.proxy[label] = await ask(key);
  process.stdout.write(JSON.stringify(out));
})();
`;

/** The per-rollout key the proxy issued: the value in the harness's env that has its form. */
function keyIn(env: Record<string, string>): string | undefined {
  return Object.values(env).find((v) => /^reins-[A-Za-z0-9_-]{16,}$/.test(v));
}

export class ObservingProvider implements SandboxProvider {
  readonly launches: HarnessLaunch[] = [];
  /** Addresses ("host:port") the probe tries to connect to; set before the run. */
  targets: string[] = [];

  constructor(readonly inner: SandboxProvider) {}

  get type() {
    return this.inner.type;
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    const sandbox = await this.inner.create(spec);
    if (spec.role === "verifier") return sandbox;
    const spawn = (argv: string[], options: ExecOptions = {}) => this.spawnObserved(sandbox, spec, argv, options);
    return new Proxy(sandbox, {
      get(target, prop) {
        if (prop === "spawn") return spawn;
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private spawnObserved(sandbox: Sandbox, spec: SandboxSpec, argv: string[], options: ExecOptions): SandboxProcess {
    const env = { ...(options.env ?? {}) };
    const apiKey = keyIn(env);
    const previous = this.launches.at(-1)?.apiKey;
    const launch: HarnessLaunch = { tryId: spec.id, spec, argv, env, ...(apiKey ? { apiKey } : {}) };
    this.launches.push(launch);
    const keys: Record<string, string> = { own: apiKey ?? "", none: "", forged: apiKey ? `${apiKey.slice(0, -4)}AAAA` : "reins-forged" };
    if (previous) keys.previous = previous;
    const probe = async (readHome: boolean): Promise<ProbeReport | undefined> => {
      const r = await sandbox.exec(["node", "-e", PROBE], {
        ...(options.cwd ? { cwd: options.cwd } : {}),
        env: {
          ...env,
          PROBE_ID: spec.id,
          PROBE_READ_HOME: readHome ? "1" : "0",
          PROBE_MOUNTS: (spec.mounts ?? []).map((m) => m.sandboxPath).join(":"),
          PROBE_TARGETS: this.targets.join(","),
          PROBE_PROXY: sandbox.proxyUrl ?? "http://127.0.0.1:9",
          PROBE_KEYS: JSON.stringify(keys),
        },
        timeoutMs: 60_000,
      });
      try {
        return JSON.parse(r.stdout) as ProbeReport;
      } catch {
        launch.probeError = `exit ${r.exitCode}: ${r.stderr.slice(-500)}`;
        return undefined;
      }
    };
    let inner: SandboxProcess | undefined;
    let killed = false;
    const done = (async (): Promise<ExecResult> => {
      const before = await probe(true);
      if (before) launch.before = before;
      if (killed) throw new Error("killed before the harness started");
      inner = sandbox.spawn(argv, options);
      const exit = await inner.wait();
      launch.exit = exit;
      if (!exit.timedOut && (await sandbox.alive())) {
        const after = await probe(false);
        if (after) launch.after = after;
      }
      return exit;
    })();
    done.catch(() => undefined);
    return {
      wait: () => done,
      kill: async () => {
        killed = true;
        await inner?.kill();
      },
    };
  }
}
