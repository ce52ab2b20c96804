// The test cluster's stand-in for kubernetes-sigs/agent-sandbox's controller (scripts/test-cluster.sh
// starts it). agent-sandbox's own controller is a Go module the Go proxy here does not serve, so it
// cannot be built; this implements the subset of its v1 (v1beta1) semantics reins uses, against the
// real API server, with the CRDs of cluster/agent-sandbox/crds.yaml (installed here at start):
// - a SandboxWarmPool is kept at `replicas` unclaimed Sandboxes, each with a Pod of its name from
//   the pool's SandboxTemplate (podTemplate), owned by the pool (replenished as they are claimed;
//   replicas 0: every claim starts cold);
// - a SandboxClaim (spec.warmPoolRef) is bound to a free warm Sandbox of its pool, a Ready one
//   first, by a resourceVersion-conditional update of that Sandbox (its claim label and owner), so
//   two claims never get one pod; with none free, or with `env` on the claim (env cannot reach a
//   running pod), a cold Sandbox is created for it. Its status says `conditions` Ready (True once
//   the pod is Ready; False with reason SandboxPodGone when the pod went, SandboxExpired past
//   shutdownTime with policy Retain) and `sandbox {name, podIPs}`;
// - a claim's Sandbox and Pod are deleted when the claim is deleted, and when its
//   `lifecycle.shutdownTime` passes (then policy Delete/DeleteForeground deletes the claim too);
// - the pool's status carries replicas and readyReplicas.
// Not implemented: Sandbox status, operatingMode/Suspended, services, volumeClaimTemplates,
// networkPolicy management, updateStrategy, ttlSecondsAfterFinished, additionalPodMetadata.
// Objects are followed with list + watch (re-established when the API server ends a watch).
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { connectCluster, parseFlags, sleep } from "./cluster-api.mjs";

const args = parseFlags(process.argv.slice(2));
const DIR = args.dir;
const { server, token, ca, api } = connectCluster(DIR, args.server);

const SANDBOX_API = "/apis/agents.x-k8s.io/v1beta1";
const EXT_API = "/apis/extensions.agents.x-k8s.io/v1beta1";
const L = {
  sandbox: "agents.x-k8s.io/sandbox",
  launch: "agents.x-k8s.io/launch-type",
  pool: "agents.x-k8s.io/warm-pool-sandbox",
  claim: "agents.x-k8s.io/claim-uid",
};


const key = (o) => `${o.metadata.namespace}/${o.metadata.name}`;

async function installCrds() {
  const docs = parseAllDocuments(readFileSync(args.crds, "utf8")).map((d) => d.toJS()).filter(Boolean);
  for (const crd of docs) {
    const r = await api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
    if (r.status !== 201 && r.status !== 409) throw new Error(`cannot install ${crd.metadata.name}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  }
  for (const crd of docs) {
    for (let i = 0; ; i++) {
      const got = await api("GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
      if ((got.body?.status?.conditions ?? []).some((c) => c.type === "Established" && c.status === "True")) break;
      if (i > 300) throw new Error(`${crd.metadata.name} did not become established`);
      await sleep(100);
    }
  }
}

/** The objects at `path` (all namespaces), kept current by list + watch; `changed` after each batch of events. */
function informer(path, changed) {
  const items = new Map();
  let rv = "";
  const state = { items, run: null, synced: false };
  const list = async () => {
    const r = await api("GET", path);
    if (r.status !== 200) throw new Error(`list ${path}: HTTP ${r.status}`);
    items.clear();
    for (const o of r.body.items) items.set(key(o), o);
    rv = r.body.metadata.resourceVersion;
    state.synced = true;
    changed();
  };
  // One watch request; resolves "gone" when the resourceVersion is too old (list again).
  const watch = () =>
    new Promise((resolve) => {
      const sep = path.includes("?") ? "&" : "?";
      const req = request(
        { host: server.hostname, port: server.port, method: "GET", path: `${path}${sep}watch=1&allowWatchBookmarks=true&timeoutSeconds=240&resourceVersion=${rv}`, ca, headers: { authorization: `Bearer ${token}`, accept: "application/json" } },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            resolve(res.statusCode === 410 ? "gone" : "again");
            return;
          }
          let buffer = "";
          let gone = false;
          res.on("data", (d) => {
            buffer += d;
            let nl;
            let any = false;
            while ((nl = buffer.indexOf("\n")) >= 0) {
              const line = buffer.slice(0, nl);
              buffer = buffer.slice(nl + 1);
              if (!line.trim()) continue;
              const e = JSON.parse(line);
              if (e.type === "ERROR") {
                gone = true;
                continue;
              }
              if (e.object?.metadata?.resourceVersion) rv = e.object.metadata.resourceVersion;
              if (e.type === "BOOKMARK") continue;
              if (e.type === "DELETED") items.delete(key(e.object));
              else items.set(key(e.object), e.object);
              any = true;
            }
            if (any) changed();
          });
          res.on("end", () => resolve(gone ? "gone" : "again"));
          res.on("error", () => resolve("again"));
        },
      );
      req.on("error", () => resolve("again"));
      req.end();
    });
  const run = async () => {
    for (;;) {
      try {
        await list();
        while ((await watch()) !== "gone");
      } catch (e) {
        console.error(`controller: ${path}: ${e.message}`);
        await sleep(500);
      }
    }
  };
  state.run = run;
  return state;
}

let kick = () => undefined;
const pools = informer(`${EXT_API}/sandboxwarmpools`, () => kick());
const templates = informer(`${EXT_API}/sandboxtemplates`, () => kick());
const claims = informer(`${EXT_API}/sandboxclaims`, () => kick());
const sandboxes = informer(`${SANDBOX_API}/sandboxes`, () => kick());
const pods = informer(`/api/v1/pods?labelSelector=${encodeURIComponent(L.sandbox)}`, () => kick());

/** What this process did that its informers may not show yet. */
const creating = new Map(); // pool key → Set of sandbox names created for it, until seen
const boundHere = new Map(); // claim uid → sandbox name
const reserved = new Set(); // sandbox keys being bound
const statusWritten = new Map(); // claim uid → the status last written (JSON)
const deleted = new Set(); // sandbox keys deleted
const finished = new Set(); // claim uids whose sandbox ended (pod gone, expired): nothing more to do

const podReady = (pod) => pod && !pod.metadata.deletionTimestamp && pod.status?.phase === "Running" && (pod.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
const podGone = (pod) => !pod || pod.metadata.deletionTimestamp || pod.status?.phase === "Failed" || pod.status?.phase === "Succeeded";
const podOf = (sb) => pods.items.get(key(sb));
const ownerRef = (o, kind, apiVersion, controller) => ({ apiVersion, kind, name: o.metadata.name, uid: o.metadata.uid, controller, blockOwnerDeletion: false });

function sandboxName(prefix) {
  const suffix = Math.random().toString(36).slice(2, 7).padEnd(5, "0");
  return `${prefix.slice(0, 63 - 6).replace(/-+$/, "")}-${suffix}`;
}

/** A Sandbox and its Pod from a template; owned by the pool (warm) or the claim (cold). */
async function createSandbox(ns, template, o) {
  const name = sandboxName(o.prefix);
  const tmeta = template.spec.podTemplate?.metadata ?? {};
  const labels = { ...(tmeta.labels ?? {}), [L.launch]: o.claim ? "cold" : "warm", ...(o.pool ? { [L.pool]: o.pool.metadata.name } : {}), ...(o.claim ? { [L.claim]: o.claim.metadata.uid } : {}) };
  const owner = o.claim ? ownerRef(o.claim, "SandboxClaim", "extensions.agents.x-k8s.io/v1beta1", true) : ownerRef(o.pool, "SandboxWarmPool", "extensions.agents.x-k8s.io/v1beta1", true);
  const sb = {
    apiVersion: "agents.x-k8s.io/v1beta1",
    kind: "Sandbox",
    metadata: { name, namespace: ns, labels, ownerReferences: [owner] },
    spec: { podTemplate: template.spec.podTemplate, operatingMode: "Running" },
  };
  const r = await api("POST", `${SANDBOX_API}/namespaces/${ns}/sandboxes`, sb);
  if (r.status !== 201) throw new Error(`create sandbox ${name}: HTTP ${r.status} ${r.body?.message ?? ""}`);
  const spec = structuredClone(template.spec.podTemplate?.spec ?? {});
  if (o.env?.length) {
    for (const c of spec.containers ?? []) {
      const mine = o.env.filter((e) => !e.containerName || e.containerName === c.name).map(({ name: n, value }) => ({ name: n, value: value ?? "" }));
      c.env = [...(c.env ?? []).filter((e) => !mine.some((m) => m.name === e.name)), ...mine];
    }
  }
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns, labels: { ...labels, [L.sandbox]: name }, annotations: { ...(tmeta.annotations ?? {}) }, ownerReferences: [ownerRef(r.body, "Sandbox", "agents.x-k8s.io/v1beta1", true)] },
    spec,
  };
  const p = await api("POST", `/api/v1/namespaces/${ns}/pods`, pod);
  if (p.status !== 201) {
    await api("DELETE", `${SANDBOX_API}/namespaces/${ns}/sandboxes/${name}`);
    throw new Error(`create pod ${name}: HTTP ${p.status} ${p.body?.message ?? ""}`);
  }
  return r.body;
}

async function deleteSandbox(sb) {
  const k = key(sb);
  if (deleted.has(k)) return;
  deleted.add(k);
  const ns = sb.metadata.namespace;
  await api("DELETE", `/api/v1/namespaces/${ns}/pods/${sb.metadata.name}?gracePeriodSeconds=0`).catch(() => undefined);
  await api("DELETE", `${SANDBOX_API}/namespaces/${ns}/sandboxes/${sb.metadata.name}`).catch(() => undefined);
}

async function writeClaimStatus(claim, status) {
  // What was written, without the transition time (a fresh one every pass).
  const text = JSON.stringify({ conditions: status.conditions.map(({ lastTransitionTime, ...c }) => c), sandbox: status.sandbox });
  if (statusWritten.get(claim.metadata.uid) === text) return;
  const current = claim.status ?? {};
  const same = JSON.stringify({ conditions: (current.conditions ?? []).map(({ lastTransitionTime, ...c }) => c), sandbox: current.sandbox }) === JSON.stringify({ conditions: status.conditions.map(({ lastTransitionTime, ...c }) => c), sandbox: status.sandbox });
  statusWritten.set(claim.metadata.uid, text);
  if (same) return;
  const r = await api("PATCH", `${EXT_API}/namespaces/${claim.metadata.namespace}/sandboxclaims/${claim.metadata.name}/status`, { status }, "application/merge-patch+json");
  if (r.status !== 200) statusWritten.delete(claim.metadata.uid);
}

const condition = (status, reason, message) => ({ type: "Ready", status, reason, message, lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z") });

/** Binds a free warm Sandbox to the claim (resourceVersion-conditional), or null when none could be. */
async function adopt(claim, pass) {
  const ns = claim.metadata.namespace;
  const candidates = pass.free.get(`${ns}/${claim.spec.warmPoolRef.name}`) ?? [];
  for (const k of candidates) {
    const sb = sandboxes.items.get(k);
    if (!sb || sb.metadata.labels?.[L.claim] || sb.metadata.deletionTimestamp || reserved.has(k) || deleted.has(k) || podGone(podOf(sb))) continue;
    reserved.add(key(sb));
    try {
      const updated = structuredClone(sb);
      updated.metadata.labels = { ...updated.metadata.labels, [L.claim]: claim.metadata.uid };
      updated.metadata.ownerReferences = [ownerRef(claim, "SandboxClaim", "extensions.agents.x-k8s.io/v1beta1", true)];
      // PUT with the resourceVersion seen: a 409 means another binder changed it first.
      const r = await api("PUT", `${SANDBOX_API}/namespaces/${ns}/sandboxes/${sb.metadata.name}`, updated);
      if (r.status === 200) {
        sandboxes.items.set(key(r.body), r.body);
        return r.body;
      }
      if (r.status !== 409 && r.status !== 404) console.error(`controller: bind ${sb.metadata.name}: HTTP ${r.status}`);
    } finally {
      reserved.delete(key(sb));
    }
  }
  return null;
}

async function reconcileClaim(claim, pass) {
  const ns = claim.metadata.namespace;
  const uid = claim.metadata.uid;
  if (claim.metadata.deletionTimestamp || finished.has(uid)) return;
  const shutdown = claim.spec.lifecycle?.shutdownTime ? Date.parse(claim.spec.lifecycle.shutdownTime) : Infinity;
  let sb = pass.byClaim.get(uid);
  if (!sb && boundHere.has(uid)) sb = sandboxes.items.get(`${ns}/${boundHere.get(uid)}`) ?? { metadata: { name: boundHere.get(uid), namespace: ns } };
  if (pass.now >= shutdown) {
    finished.add(uid);
    if (sb) await deleteSandbox(sb);
    const policy = claim.spec.lifecycle?.shutdownPolicy ?? "Retain";
    if (policy === "Retain") await writeClaimStatus(claim, { conditions: [condition("False", "SandboxExpired", "the claim's shutdownTime passed")], sandbox: claim.status?.sandbox ?? {} });
    else await api("DELETE", `${EXT_API}/namespaces/${ns}/sandboxclaims/${claim.metadata.name}${policy === "DeleteForeground" ? "?propagationPolicy=Foreground" : ""}`);
    return;
  }
  if (!sb) {
    const pool = pools.items.get(`${ns}/${claim.spec.warmPoolRef?.name}`);
    if (!pool) return writeClaimStatus(claim, { conditions: [condition("False", "WarmPoolNotFound", `no SandboxWarmPool ${claim.spec.warmPoolRef?.name}`)] });
    const template = templates.items.get(`${ns}/${pool.spec.sandboxTemplateRef.name}`);
    if (!template) return writeClaimStatus(claim, { conditions: [condition("False", "TemplateNotFound", `no SandboxTemplate ${pool.spec.sandboxTemplateRef.name}`)] });
    const cold = (claim.spec.env ?? []).length > 0 || (claim.spec.volumeClaimTemplates ?? []).length > 0;
    sb = cold ? null : await adopt(claim, pass);
    if (!sb) sb = await createSandbox(ns, template, { prefix: claim.metadata.name, claim, env: claim.spec.env });
    boundHere.set(uid, sb.metadata.name);
  }
  const pod = podOf(sb);
  if (podReady(pod)) {
    await writeClaimStatus(claim, { conditions: [condition("True", "SandboxReady", "")], sandbox: { name: sb.metadata.name, podIPs: (pod.status.podIPs ?? []).map((p) => p.ip) } });
  } else if (pod && podGone(pod)) {
    finished.add(uid);
    await writeClaimStatus(claim, { conditions: [condition("False", "SandboxPodGone", `pod ${pod.metadata.name} ended or is being deleted`)], sandbox: { name: sb.metadata.name } });
    await deleteSandbox(sb);
  } else if (!pod && claim.status?.sandbox?.name === sb.metadata.name) {
    // The pod was Ready for this claim and is gone now (deleted, evicted).
    finished.add(uid);
    await writeClaimStatus(claim, { conditions: [condition("False", "SandboxPodGone", `pod ${sb.metadata.name} is gone`)], sandbox: { name: sb.metadata.name } });
    await deleteSandbox(sb);
  }
}

async function reconcilePool(pool) {
  const ns = pool.metadata.namespace;
  const pk = key(pool);
  if (pool.metadata.deletionTimestamp) return;
  const template = templates.items.get(`${ns}/${pool.spec.sandboxTemplateRef.name}`);
  const mine = [...sandboxes.items.values()].filter((sb) => sb.metadata.namespace === ns && sb.metadata.labels?.[L.pool] === pool.metadata.name && !sb.metadata.labels?.[L.claim] && !sb.metadata.deletionTimestamp && !deleted.has(key(sb)));
  const pending = creating.get(pk) ?? new Set();
  for (const name of pending) if (sandboxes.items.has(`${ns}/${name}`)) pending.delete(name);
  creating.set(pk, pending);
  // A warm sandbox whose pod went is replaced.
  for (const sb of mine) if (podGone(podOf(sb)) && (podOf(sb) || Date.now() - Date.parse(sb.metadata.creationTimestamp) > 10_000)) await deleteSandbox(sb);
  const live = mine.filter((sb) => !deleted.has(key(sb)));
  const replicas = pool.spec.replicas ?? 1;
  const missing = replicas - live.length - pending.size;
  if (template && missing > 0) {
    await Promise.all(
      Array.from({ length: missing }, async () => {
        try {
          const sb = await createSandbox(ns, template, { prefix: pool.metadata.name, pool });
          if (!sandboxes.items.has(key(sb))) pending.add(sb.metadata.name);
        } catch (e) {
          console.error(`controller: pool ${pk}: ${e.message}`);
        }
      }),
    );
  }
  if (missing < 0) {
    const extra = live.sort((a, b) => Number(podReady(podOf(a))) - Number(podReady(podOf(b)))).slice(0, -missing);
    await Promise.all(extra.map(deleteSandbox));
  }
  const ready = live.filter((sb) => podReady(podOf(sb))).length;
  const status = { replicas: live.length, readyReplicas: ready, selector: `${L.pool}=${pool.metadata.name}`, observedGeneration: pool.metadata.generation };
  const s = pool.status ?? {};
  if (s.replicas !== status.replicas || s.readyReplicas !== status.readyReplicas || s.observedGeneration !== status.observedGeneration) {
    await api("PATCH", `${EXT_API}/namespaces/${ns}/sandboxwarmpools/${pool.metadata.name}/status`, { status }, "application/merge-patch+json");
  }
}

/** Sandboxes of claims, and unclaimed ones of pools, that are gone go with them (the garbage collector would, later). */
async function reconcileOrphans() {
  const claimUids = new Set([...claims.items.values()].map((c) => c.metadata.uid));
  const orphaned = (sb) => {
    const labels = sb.metadata.labels ?? {};
    if (labels[L.claim]) return !claimUids.has(labels[L.claim]);
    return labels[L.pool] !== undefined && !pools.items.has(`${sb.metadata.namespace}/${labels[L.pool]}`);
  };
  const orphans = [...sandboxes.items.values()].filter((sb) => orphaned(sb) && !sb.metadata.deletionTimestamp);
  await Promise.all(orphans.map(deleteSandbox));
  for (const uid of [...boundHere.keys()]) if (!claimUids.has(uid)) boundHere.delete(uid), statusWritten.delete(uid);
  for (const uid of [...finished]) if (!claimUids.has(uid)) finished.delete(uid);
  for (const k of [...deleted]) if (!sandboxes.items.has(k) && !pods.items.has(k)) deleted.delete(k);
}

/** Runs `work` over items, at most `n` at once. */
async function limited(items, n, work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++];
        await work(item).catch((e) => console.error(`controller: ${e.message}`));
      }
    }),
  );
}

let running = false;
let again = false;
const informers = [pools, templates, claims, sandboxes, pods];
async function reconcile() {
  if (!informers.every((i) => i.synced)) return;
  if (running) {
    again = true;
    return;
  }
  running = true;
  try {
    do {
      again = false;
      const pass = { now: Date.now(), byClaim: new Map(), free: new Map() };
      for (const sb of sandboxes.items.values()) {
        const labels = sb.metadata.labels ?? {};
        if (labels[L.claim]) pass.byClaim.set(labels[L.claim], sb);
        else if (labels[L.pool]) {
          const pk = `${sb.metadata.namespace}/${labels[L.pool]}`;
          if (!pass.free.has(pk)) pass.free.set(pk, []);
          pass.free.get(pk).push(key(sb));
        }
      }
      // Ready ones first.
      for (const list of pass.free.values()) list.sort((a, b) => Number(podReady(pods.items.get(b))) - Number(podReady(pods.items.get(a))));
      await limited([...claims.items.values()], 64, (c) => reconcileClaim(c, pass));
      await reconcileOrphans();
      await limited([...pools.items.values()], 16, reconcilePool);
    } while (again);
  } finally {
    running = false;
  }
}

async function main() {
  await installCrds();
  writeFileSync(join(DIR, "controller.ready"), "");
  for (const i of informers) void i.run();
  let scheduled = null;
  kick = () => {
    if (scheduled) return;
    scheduled = setTimeout(() => {
      scheduled = null;
      reconcile().catch((e) => console.error(`controller: ${e.stack ?? e}`));
    }, 10);
  };
  // Shutdown times pass without an event.
  setInterval(kick, 1000);
  console.log("controller: agent-sandbox CRDs installed; reconciling warm pools and claims");
}

for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => process.exit(0));

main().catch((e) => {
  console.error(`controller: ${e.stack ?? e}`);
  process.exit(1);
});
