/**
 * Rollout sandboxes at scale against a real API server (the test cluster, scripts/test-cluster.sh,
 * started here with a directory and ports of its own): N rollouts at once through the kubernetes
 * provider — pod created and Ready, a file written over exec, a command run, its output read back
 * (the verifier's way), the pod deleted — beside, in the same run, the bare lifecycle of the same
 * Pod manifest through the API client alone (create, poll until Ready, delete). Prints p50/p99 of
 * create→ready and of the whole rollout, their ratio to bare (when both ran as many at once), and the API requests per rollout as
 * the API server counted them (apiserver_request_total), by verb and resource.
 * Then, in the same run, agent-sandbox warm pools (the test cluster's stand-in controller, see
 * scripts/test-cluster-sandbox-controller.mjs): a pool of --warm ready pods, then as many rollouts
 * at once through SandboxClaims — claim→exec-ready (the claim created, bound, the rollout's identity
 * patched onto the pod, a first command run) beside the cold pods' create→exec-ready, and the API
 * requests per rollout (the controller's binding and replenishing included; the pool's warm-up not).
 *   node --import tsx bench/k8s-scale.ts [--rollouts 1000] [--bare 200] [--warm 200]
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { makeKubeClients, makeKubeConfig } from "../src/runtime/sandbox/kubernetes/client.js";
import { buildSandboxPod } from "../src/runtime/sandbox/kubernetes/manifests.js";
import { AGENT_SANDBOX } from "../src/runtime/sandbox/kubernetes/manifests.js";
import { KubernetesSandboxProvider } from "../src/runtime/sandbox/kubernetes/provider.js";
import { isPodReady } from "../src/runtime/sandbox/kubernetes/sandbox.js";
import { DEFAULT_SANDBOX_IMAGE } from "../src/runtime/sandbox/layout.js";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const ROLLOUTS = arg("--rollouts", 1000);
const BARE = arg("--bare", 200);
const WARM = arg("--warm", 200);

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
}

const dir = mkdtempSync(join(tmpdir(), "reins-bench-cluster-"));
const port = String(30000 + Math.floor(Math.random() * 1000) * 10);
const env = { ...process.env, REINS_TEST_CLUSTER_DIR: dir, REINS_TEST_CLUSTER_PORT: port };

/** The API server's request counts by "VERB resource" (apiserver_request_total, summed over codes). */
function requestCounts(): Promise<Map<string, number>> {
  const token = readFileSync(join(dir, "token"), "utf8").trim();
  return new Promise((done, fail) => {
    const req = request(
      { host: "127.0.0.1", port, path: "/metrics", ca: readFileSync(join(dir, "pki", "ca.crt")), headers: { authorization: `Bearer ${token}` } },
      (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => {
          const counts = new Map<string, number>();
          for (const line of text.split("\n")) {
            if (!line.startsWith("apiserver_request_total{")) continue;
            const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
            const key = `${labels.verb} ${labels.subresource ? `${labels.resource}/${labels.subresource}` : labels.resource}`;
            counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
          }
          done(counts);
        });
      },
    );
    req.on("error", fail);
    req.end();
  });
}

/** The resources a sandbox's life touches: pods (and their exec), the run's objects, agent-sandbox's. */
const RESOURCES = /pods|configmaps|networkpolicies|sandbox/;

interface Timing {
  ready: number;
  /** Create, then a first command run: when the rollout could start. */
  execReady: number;
  total: number;
}

/** n rollouts at once through a provider: create, a first command, a file in, a command, a file out, destroy. */
async function rollouts(provider: KubernetesSandboxProvider, runId: string, n: number): Promise<{ ok: Timing[]; failed: number; wall: number }> {
  const started = performance.now();
  let failed = 0;
  const runs = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const t0 = performance.now();
      try {
        const sb = await provider.create({ id: `r-${i}`, runId, task: "t", harness: "h", network: "none", timeoutSeconds: 1800 });
        const ready = performance.now() - t0;
        await sb.exec(["true"]);
        const execReady = performance.now() - t0;
        await sb.writeFiles([{ path: "in.txt", content: `rollout ${i}\n` }]);
        const r = await sb.exec(["sh", "-c", "tr a-z A-Z < in.txt > out.txt"]);
        const out = (await sb.readFile("/workspace/out.txt")).toString();
        await sb.destroy();
        if (r.exitCode !== 0 || out !== `ROLLOUT ${i}\n`) failed++;
        return { ready, execReady, total: performance.now() - t0 };
      } catch (e) {
        failed++;
        if (failed <= 3) console.error(`${runId} rollout ${i}: ${(e as Error).message}`);
        return undefined;
      }
    }),
  );
  return { ok: runs.filter((r): r is Timing => r !== undefined), failed, wall: (performance.now() - started) / 1000 };
}

function delta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0) out.set(k, d);
  }
  return out;
}

async function main(): Promise<void> {
  const kubeconfig = execFileSync("bash", ["scripts/test-cluster.sh", "start"], { env, encoding: "utf8" }).trim().split("\n").at(-1)!;
  process.env.KUBECONFIG = kubeconfig;
  try {
    const clients = makeKubeClients(makeKubeConfig());
    // Bare: the same Pod manifest, create → poll Ready (every 500 ms, as the provider) → delete.
    const bareBefore = await requestCounts();
    const bare = await Promise.all(
      Array.from({ length: BARE }, async (_, i) => {
        const pod = buildSandboxPod({
          identity: { runId: "bare", rolloutId: `b-${i}`, task: "t", harness: "h" },
          namespace: "default",
          image: DEFAULT_SANDBOX_IMAGE,
          env: {},
        }) as unknown as V1Pod;
        delete pod.metadata!.ownerReferences;
        const t0 = performance.now();
        await clients.core.createNamespacedPod({ namespace: "default", body: pod });
        for (;;) {
          const got = await clients.core.readNamespacedPod({ name: pod.metadata!.name!, namespace: "default" });
          if (isPodReady(got)) break;
          await new Promise((r) => setTimeout(r, 500));
        }
        const ready = performance.now() - t0;
        await clients.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: "default", gracePeriodSeconds: 0 });
        return { ready, total: performance.now() - t0 };
      }),
    );
    const bareCalls = delta(bareBefore, await requestCounts());

    // reins: the provider, N rollouts at once (a Pod each).
    const provider = new KubernetesSandboxProvider({ namespace: "default" });
    const before = await requestCounts();
    const cold = await rollouts(provider, "run-bench", ROLLOUTS);
    await provider.close();
    const calls = delta(before, await requestCounts());
    const { ok, failed, wall } = cold;

    // Warm: a pool of WARM ready pods (its warm-up is not measured), then WARM claims at once.
    const warmProvider = new KubernetesSandboxProvider({ namespace: "default", useSandboxClaims: true, warmPool: WARM });
    const first = await warmProvider.create({ id: "warm-up", runId: "run-warm", task: "t", harness: "h", network: "none", timeoutSeconds: 1800 });
    await first.destroy();
    for (;;) {
      const pools = (await clients.custom.listNamespacedCustomObject({ ...AGENT_SANDBOX, namespace: "default", plural: "sandboxwarmpools" })) as {
        items: { status?: { readyReplicas?: number } }[];
      };
      if ((pools.items[0]?.status?.readyReplicas ?? 0) >= WARM) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const warmBefore = await requestCounts();
    const warm = await rollouts(warmProvider, "run-warm", WARM);
    // The pool refilled: its replenishing is part of what the claims cost.
    for (;;) {
      const pools = (await clients.custom.listNamespacedCustomObject({ ...AGENT_SANDBOX, namespace: "default", plural: "sandboxwarmpools" })) as {
        items: { status?: { readyReplicas?: number } }[];
      };
      if ((pools.items[0]?.status?.readyReplicas ?? 0) >= WARM) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const warmCalls = delta(warmBefore, await requestCounts());
    await warmProvider.close();

    const ms = (x: number) => `${Math.round(x)} ms`;
    const perRollout = (c: Map<string, number>, n: number) =>
      [...c]
        .filter(([k]) => RESOURCES.test(k))
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${(v / n).toFixed(2)}`)
        .join(", ");
    const sum = (c: Map<string, number>) => [...c].filter(([k]) => RESOURCES.test(k)).reduce((a, [, v]) => a + v, 0);
    const q = (xs: number[]) => `p50 ${ms(quantile(xs, 0.5))} p99 ${ms(quantile(xs, 0.99))}`;
    console.log(
      `kubernetes provider against the test cluster's API server (kube-apiserver 1.37.2, kwok node), ${ROLLOUTS} rollouts at once; bare: ${BARE} pods at once`,
    );
    console.log(`  rollouts verified: ${ROLLOUTS - failed}/${ROLLOUTS}, wall ${wall.toFixed(1)} s, ${(ROLLOUTS / wall).toFixed(1)} rollouts/s`);
    console.log(
      `  create→ready  reins p50 ${ms(
        quantile(
          ok.map((r) => r.ready),
          0.5,
        ),
      )} p99 ${ms(
        quantile(
          ok.map((r) => r.ready),
          0.99,
        ),
      )}   bare p50 ${ms(
        quantile(
          bare.map((r) => r.ready),
          0.5,
        ),
      )} p99 ${ms(
        quantile(
          bare.map((r) => r.ready),
          0.99,
        ),
      )}   ${
        ROLLOUTS === BARE
          ? `ratio p50 ${(
              quantile(
                ok.map((r) => r.ready),
                0.5,
              ) /
                quantile(
                  bare.map((r) => r.ready),
                  0.5,
                )
            ).toFixed(2)}×`
          : "(no ratio: not as many at once)"
      }`,
    );
    console.log(
      `  whole rollout (create, write, exec, read, delete) p50 ${ms(
        quantile(
          ok.map((r) => r.total),
          0.5,
        ),
      )} p99 ${ms(
        quantile(
          ok.map((r) => r.total),
          0.99,
        ),
      )}`,
    );
    console.log(`  API requests per rollout: reins ${(sum(calls) / ROLLOUTS).toFixed(1)} (${perRollout(calls, ROLLOUTS)})`);
    console.log(`                            bare  ${(sum(bareCalls) / BARE).toFixed(1)} (${perRollout(bareCalls, BARE)})`);
    console.log(`agent-sandbox warm pool of ${WARM} (stand-in controller), ${WARM} claims at once; cold: the ${ROLLOUTS} Pods above`);
    console.log(`  rollouts verified: ${WARM - warm.failed}/${WARM}, wall ${warm.wall.toFixed(1)} s, ${(WARM / warm.wall).toFixed(1)} rollouts/s`);
    console.log(
      `  claim→exec-ready  warm ${q(warm.ok.map((r) => r.execReady))}   cold pods create→exec-ready ${q(ok.map((r) => r.execReady))}   ${
        ROLLOUTS === WARM
          ? `ratio p50 ${(
              quantile(
                ok.map((r) => r.execReady),
                0.5,
              ) /
                quantile(
                  warm.ok.map((r) => r.execReady),
                  0.5,
                )
            ).toFixed(1)}× faster warm`
          : "(no ratio: not as many at once)"
      }`,
    );
    console.log(
      `  claim→bound (the claim Ready, the identity patched): warm ${q(warm.ok.map((r) => r.ready))}; whole rollout warm ${q(warm.ok.map((r) => r.total))}`,
    );
    console.log(`  API requests per rollout: warm ${(sum(warmCalls) / WARM).toFixed(1)} (${perRollout(warmCalls, WARM)})`);
  } finally {
    execFileSync("bash", ["scripts/test-cluster.sh", "stop"], { env, stdio: "ignore" });
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
