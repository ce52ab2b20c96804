// The test cluster's node agent (scripts/test-cluster.sh starts it): installs kwok's Exec CRD,
// registers the simulated node, and gives every pod bound to it namespaces of its own before kwok
// marks it Ready: a bubblewrap root (the host's /usr and /etc read-only, or a harness image's files
// when the pod runs one reins built; the pod's own /workspace,
// /home/sandbox and /tmp; its own PID, IPC and UTS namespaces; the host network) kept alive by a
// keeper process, and an Exec object telling kwok which pod a command is for. kwok runs `kubectl
// exec` commands through the shims in <dir>/shims, which enter that pod's namespaces as uid 1000.
// When a pod is gone its keeper, files and Exec object go too.
// Pods of a Job (reins' trainer Job) also run their container's command (test-cluster-command.mjs).
import { spawn } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { connectCluster, parseFlags, sleep } from "./cluster-api.mjs";
import { hostsFile, prepareContainer, runContainer } from "./test-cluster-command.mjs";

const args = parseFlags(process.argv.slice(2));
const DIR = args.dir;
const NODE = args.node;
const { api } = connectCluster(DIR, args.server);
const UID = 1000;
const REPO = join(import.meta.dirname, "..");
const VENV = args.venv;

async function installExecCrd() {
  const crd = parse(readFileSync(join(args["kwok-crds"], "kwok.x-k8s.io_execs.yaml"), "utf8"));
  const r = await api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
  if (r.status !== 201 && r.status !== 409) throw new Error(`cannot install the Exec CRD: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  for (let i = 0; i < 300; i++) {
    const got = await api("GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
    if ((got.body?.status?.conditions ?? []).some((c) => c.type === "Established" && c.status === "True")) return;
    await sleep(100);
  }
  throw new Error("the Exec CRD did not become established");
}

async function registerNode() {
  const resources = { cpu: "64", memory: "256Gi", pods: "5000", "ephemeral-storage": "1Ti" };
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: NODE, annotations: { "kwok.x-k8s.io/node": "fake" }, labels: { "kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux", type: "kwok" } },
    spec: {},
    status: { capacity: resources, allocatable: resources },
  };
  const r = await api("POST", "/api/v1/nodes", node);
  if (r.status !== 201 && r.status !== 409) throw new Error(`cannot register node ${NODE}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
}

/**
 * The API server taints a new node not-ready; with no node lifecycle controller here, the agent
 * lifts the taint once kwok has made the node Ready.
 */
async function untaintWhenReady() {
  for (;;) {
    const r = await api("GET", `/api/v1/nodes/${NODE}`);
    const ready = (r.body?.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
    if (ready) {
      await api("PATCH", `/api/v1/nodes/${NODE}`, { spec: { taints: null } }, "application/merge-patch+json");
      console.log(`agent: node ${NODE} is Ready and untainted`);
      return;
    }
    await sleep(100);
  }
}

/** uid → {namespace, name, outer (bwrap pid)} */
const pods = new Map();

function startKeeper(dir, root, extra = { mounts: [], hostname: "pod" }) {
  return new Promise((resolve, reject) => {
    const files = root
      ? ["--ro-bind", root, "/"]
      : ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64"];
    const argv = [
      ...files,
      "--bind", join(dir, "workspace"), "/workspace", "--bind", join(dir, "home"), "/home/sandbox", "--bind", join(dir, "tmp"), "/tmp",
      "--proc", "/proc", "--dev", "/dev",
      ...extra.mounts, // after /dev: an emptyDir on /dev/shm
      "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", extra.hostname,
      "--die-with-parent", "--info-fd", "3", "--", "/bin/sleep", "infinity",
    ];
    const child = spawn("bwrap", argv, { stdio: ["ignore", "ignore", "pipe", "pipe"] });
    let info = "";
    let err = "";
    child.stdio[3].on("data", (d) => {
      info += d;
      const m = /"child-pid"\s*:\s*(\d+)/.exec(info);
      if (m) resolve({ outer: child.pid, inner: Number(m[1]), child });
    });
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) => reject(new Error(`bwrap exited ${code}: ${err.trim()}`)));
  });
}

/**
 * A harness image reins built (labelled reins.dev/harness) is "pulled" from this machine's podman:
 * the pod's root is that image's files, read-only. Any other image: the host's /usr and /etc.
 */
const imageRoots = new Map();
function podmanOut(argv) {
  return new Promise((resolve) => {
    const child = spawn("podman", argv, { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("error", () => resolve(null));
    child.on("exit", (code) => resolve(code === 0 ? out.trim() : null));
  });
}
function imageRoot(image) {
  let root = imageRoots.get(image);
  if (!root) {
    root = (async () => {
      const harness = await podmanOut(["image", "inspect", "--format", '{{index .Labels "reins.dev/harness"}}', image]);
      if (!harness || harness === "<no value>") return null;
      return podmanOut(["image", "mount", image]);
    })();
    imageRoots.set(image, root);
  }
  return root;
}

async function setUp(pod) {
  const { uid, namespace, name } = pod.metadata;
  const dir = join(DIR, "pods", uid);
  for (const d of ["workspace", "home", "tmp"]) {
    mkdirSync(join(dir, d), { recursive: true });
    chownSync(join(dir, d), UID, UID);
  }
  chmodSync(join(dir, "tmp"), 0o1777);
  const root = await imageRoot(pod.spec.containers[0]?.image ?? "");
  if (root) console.log(`agent: pod ${namespace}/${name} runs in the files of ${pod.spec.containers[0].image}`);
  // A Job's pod runs its container's command: its volumes, an /etc/hosts naming the Job's pods,
  // the image's files (simulated, test-cluster-command.mjs), then the command once the pod is Ready.
  const runs = (pod.metadata.ownerReferences ?? []).some((o) => o.kind === "Job") && (pod.spec.containers[0]?.command ?? []).length > 0;
  const container = runs ? await prepareContainer(api, pod, dir, { repo: REPO, uid: UID, venv: VENV, root }) : null;
  if (container) writeFileSync(join(dir, "hosts"), await hostsFile(api, pod));
  const extra = container ? { mounts: [...container.mounts, "--ro-bind", join(dir, "hosts"), "/etc/hosts"], hostname: pod.spec.hostname ?? name } : undefined;
  const keeper = await startKeeper(dir, root, extra);
  pods.set(uid, { namespace, name, keeper });
  writeFileSync(join(dir, "keeper.pid"), String(keeper.inner));
  writeFileSync(join(dir, "keeper.outer"), String(keeper.outer));
  const exec = { apiVersion: "kwok.x-k8s.io/v1alpha1", kind: "Exec", metadata: { name, namespace }, spec: { execs: [{ local: { envs: [{ name: "REINS_SIM_POD", value: uid }] } }] } };
  const created = await api("POST", `/apis/kwok.x-k8s.io/v1alpha1/namespaces/${namespace}/execs`, exec);
  if (created.status === 409) {
    await api("DELETE", `/apis/kwok.x-k8s.io/v1alpha1/namespaces/${namespace}/execs/${name}`);
    await api("POST", `/apis/kwok.x-k8s.io/v1alpha1/namespaces/${namespace}/execs`, exec);
  }
  await sleep(50); // kwok's informer sees the Exec before the pod turns Ready
  // The pods share this machine's network: sim.reins.dev/address says where a pod's ports are.
  const annotations = { "sim.reins.dev/ready": "true", ...(runs ? { "sim.reins.dev/command": "true", "sim.reins.dev/address": "127.0.0.1" } : {}) };
  await api("PATCH", `/api/v1/namespaces/${namespace}/pods/${name}`, { metadata: { annotations } }, "application/merge-patch+json");
  if (container) {
    runContainer(api, pod, container, { keeperPid: keeper.inner, uid: UID, log: join(DIR, "logs", "pods", `${namespace}_${name}.log`) }).catch((e) => console.error(`agent: pod ${namespace}/${name}: ${e.message}`));
  }
}

async function tearDown(uid) {
  const p = pods.get(uid);
  pods.delete(uid);
  if (!p) return;
  p.keeper.child.kill("SIGKILL");
  rmSync(join(DIR, "pods", uid), { recursive: true, force: true });
  await api("DELETE", `/apis/kwok.x-k8s.io/v1alpha1/namespaces/${p.namespace}/execs/${p.name}`).catch(() => undefined);
}

/**
 * A provisioner of sorts: each claim waiting for a volume gets a hostPath PersistentVolume under
 * <dir>/volumes made for it (the controller manager binds them); a volume whose claim is gone goes.
 */
async function provisionVolumes() {
  const claims = await api("GET", "/api/v1/persistentvolumeclaims");
  const volumes = await api("GET", "/api/v1/persistentvolumes?labelSelector=sim.reins.dev%2Fprovisioned");
  if (claims.status !== 200 || volumes.status !== 200) return;
  const claimed = new Set(volumes.body.items.map((v) => v.spec.claimRef?.uid));
  for (const c of claims.body.items) {
    if (c.spec.volumeName || claimed.has(c.metadata.uid) || c.metadata.deletionTimestamp) continue;
    const path = join(DIR, "volumes", c.metadata.uid);
    mkdirSync(path, { recursive: true });
    chownSync(path, UID, UID); // pods write to it as uid 1000
    const pv = {
      apiVersion: "v1",
      kind: "PersistentVolume",
      metadata: { name: `sim-${c.metadata.uid}`, labels: { "sim.reins.dev/provisioned": "true" } },
      spec: {
        capacity: { storage: c.spec.resources?.requests?.storage ?? "1Gi" },
        accessModes: c.spec.accessModes ?? ["ReadWriteOnce"],
        hostPath: { path },
        persistentVolumeReclaimPolicy: "Retain",
        storageClassName: c.spec.storageClassName ?? "",
        claimRef: { namespace: c.metadata.namespace, name: c.metadata.name, uid: c.metadata.uid },
      },
    };
    const r = await api("POST", "/api/v1/persistentvolumes", pv);
    if (r.status === 201) console.log(`agent: volume ${pv.metadata.name} for claim ${c.metadata.namespace}/${c.metadata.name}`);
  }
  const live = new Set(claims.body.items.map((c) => c.metadata.uid));
  for (const v of volumes.body.items) {
    const uid = v.spec.claimRef?.uid;
    if (uid && !live.has(uid)) {
      await api("DELETE", `/api/v1/persistentvolumes/${v.metadata.name}`);
      rmSync(join(DIR, "volumes", uid), { recursive: true, force: true });
    }
  }
}

function writeShims() {
  const shims = join(DIR, "shims");
  mkdirSync(shims, { recursive: true });
  for (const [name, target] of [["sh", "/bin/sh"], ["env", "/bin/env"]]) {
    const script = `#!/bin/sh
# kwok runs a pod's exec commands through this: into the pod's namespaces, as uid ${UID}.
d="$REINS_SIM_DIR/pods/$REINS_SIM_POD"
if [ -z "$REINS_SIM_POD" ] || [ ! -f "$d/keeper.pid" ]; then echo "test cluster: this pod has no namespaces" >&2; exit 126; fi
exec /usr/bin/nsenter -t "$(cat "$d/keeper.pid")" -m -p -i -u -r -w -S ${UID} -G ${UID} -- ${target} "$@"
`;
    writeFileSync(join(shims, name), script, { mode: 0o755 });
  }
}

async function main() {
  writeShims();
  await installExecCrd();
  await registerNode();
  writeFileSync(join(DIR, "agent.ready"), "");
  untaintWhenReady().catch((e) => console.error(`agent: ${e.message}`));
  console.log(`agent: node ${NODE} registered; watching its pods`);
  const busy = new Set();
  for (;;) {
    const r = await api("GET", `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${NODE}`)}`).catch((e) => ({ status: 0, error: e }));
    if (r.status === 200) {
      const seen = new Set();
      for (const pod of r.body.items) {
        const uid = pod.metadata.uid;
        seen.add(uid);
        if (pods.has(uid) || busy.has(uid) || pod.metadata.deletionTimestamp) continue;
        busy.add(uid);
        setUp(pod)
          .catch((e) => console.error(`agent: pod ${pod.metadata.namespace}/${pod.metadata.name}: ${e.message}`))
          .finally(() => busy.delete(uid));
      }
      for (const uid of [...pods.keys()]) if (!seen.has(uid)) await tearDown(uid);
    }
    await provisionVolumes().catch((e) => console.error(`agent: volumes: ${e.message}`));
    await sleep(100);
  }
}

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, async () => {
    for (const p of pods.values()) p.keeper.child.kill("SIGKILL");
    for (const [image, root] of imageRoots) if (await root) await podmanOut(["image", "unmount", image]);
    process.exit(0);
  });
}

main().catch((e) => {
  console.error(`agent: ${e.stack ?? e}`);
  process.exit(1);
});
