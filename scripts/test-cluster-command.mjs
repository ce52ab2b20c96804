// The test cluster's stand-in for a kubelet running a container's command, used by the node agent
// (test-cluster-agent.mjs) for the pods of a Job (reins' trainer Job): what the pod mounts, its
// /etc/hosts, the command line, and the run itself with the pod's status kept up to date.
//
// What is real: the command runs as uid 1000 inside the pod's namespaces (the keeper's mount, PID,
// IPC and UTS namespaces), its exit code becomes the pod's phase (Running, then Succeeded or Failed
// with containerStatuses[0].state.terminated.exitCode) for the Job controller, and its volumes
// are the claim's PersistentVolume (the hostPath the agent provisioned) and emptyDirs.
// What is simulated:
// - the image: the host's /usr and /etc read-only (or a reins-built harness image's files), and
//   for a reins trainer image (reins-trainer*) this checkout read-only at the container's
//   workingDir (where that image holds reins' trainers/ package);
// - the executable: looked up on the image's PATH; one it lacks (e.g. torchrun) is taken from
//   the agent's --venv (scripts/install-python.sh's venv, bound read-only at its own path, with the
//   interpreter it was made from);
// - the network: the pods share the host's network, so every pod of the Job is 127.0.0.1 in the
//   pod's /etc/hosts (`<job>-<i>.<subdomain>[.<ns>.svc[.cluster.local]]` and `<job>-<i>`), and the
//   agent publishes the pod's reachable address in the annotation sim.reins.dev/address (kwok's
//   pod IPs route nowhere). Two pods binding one port clash; reins picks free ports for its Job.
// - logs: stdout and stderr go to <dir>/logs/pods/<namespace>_<pod>.log (no `kubectl logs`), and
//   their last lines become the terminated state's message.
import { spawn } from "node:child_process";
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

const PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function trainerImage(image) {
  return /(^|\/)reins-trainer(:|@|$)/.test(image ?? "");
}

/** Where `name` lives on the pod's PATH (root: the image's files, or null for the host's /usr). */
function lookup(name, root) {
  if (name.includes("/")) return name;
  for (const d of PATH.split(":")) if (existsSync(join(root ?? "/", d, name))) return join(d, name);
  return null;
}

/** The container's env with fieldRefs resolved (metadata.name/namespace/annotations/labels, status.podIP). */
function containerEnv(pod, container) {
  const env = {};
  const field = (path) => {
    const m = /^metadata\.(annotations|labels)\['(.+)'\]$/.exec(path);
    if (m) return pod.metadata[m[1]]?.[m[2]] ?? "";
    return { "metadata.name": pod.metadata.name, "metadata.namespace": pod.metadata.namespace, "metadata.uid": pod.metadata.uid, "spec.nodeName": pod.spec.nodeName, "status.podIP": "127.0.0.1" }[path] ?? "";
  };
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = expand(e.value, env);
    else if (e.valueFrom?.fieldRef) env[e.name] = field(e.valueFrom.fieldRef.fieldPath);
  }
  return env;
}

/** Kubernetes' $(VAR) expansion: defined names are replaced, $$ is a literal $. */
function expand(text, env) {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (all, name) => (all === "$$" ? "$" : name in env ? env[name] : all));
}

/** Bind mounts for the pod's volumes, the simulated image and the executable; and the resolved command. */
export async function prepareContainer(api, pod, dir, o) {
  const container = pod.spec.containers[0];
  const mounts = [];
  // bwrap makes a mount point's missing parents mode 0700; uid 1000 must pass through them.
  const made = new Set(["/", "/dev", "/etc", "/usr", "/tmp", "/home", "/workspace", "/proc"]);
  const bind = (how, source, target) => {
    const parts = target.split("/").filter(Boolean);
    for (let i = 1; i < parts.length; i++) {
      const parent = `/${parts.slice(0, i).join("/")}`;
      if (!made.has(parent)) mounts.push("--perms", "0755", "--dir", parent), made.add(parent);
    }
    mounts.push(how, source, target);
  };
  const volumes = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v]));
  for (const m of container.volumeMounts ?? []) {
    const v = volumes.get(m.name);
    let source;
    if (v?.persistentVolumeClaim) {
      const claim = await api("GET", `/api/v1/namespaces/${pod.metadata.namespace}/persistentvolumeclaims/${v.persistentVolumeClaim.claimName}`);
      const pv = claim.body?.spec?.volumeName && (await api("GET", `/api/v1/persistentvolumes/${claim.body.spec.volumeName}`));
      source = pv?.body?.spec?.hostPath?.path;
      if (!source) throw new Error(`claim ${v.persistentVolumeClaim.claimName} has no hostPath volume bound yet`);
    } else if (v?.emptyDir) {
      source = join(dir, "volumes", m.name);
      mkdirSync(source, { recursive: true });
      chownSync(source, o.uid, o.uid);
    } else if (v?.hostPath) {
      source = v.hostPath.path;
    } else {
      console.error(`agent: pod ${pod.metadata.name}: volume ${m.name} is not simulated; skipped`);
      continue;
    }
    bind(m.readOnly || v.persistentVolumeClaim?.readOnly ? "--ro-bind" : "--bind", source, m.mountPath);
  }
  const workingDir = container.workingDir ?? "/";
  if (trainerImage(container.image)) bind("--ro-bind", o.repo, workingDir);
  const env = containerEnv(pod, container);
  const argv = [...(container.command ?? []), ...(container.args ?? [])].map((a) => expand(a, env));
  let path = PATH;
  if (!lookup(argv[0], o.root)) {
    const fromVenv = o.venv && existsSync(join(o.venv, "bin", argv[0]));
    if (!fromVenv) throw new Error(`${argv[0]} is neither on the image's PATH nor in the agent's --venv`);
    const home = /^home\s*=\s*(.+)$/m.exec(readFileSync(join(o.venv, "pyvenv.cfg"), "utf8"))?.[1]?.trim();
    bind("--ro-bind", o.venv, o.venv);
    if (home && !home.startsWith("/usr/")) bind("--ro-bind", dirname(home), dirname(home));
    path = `${join(o.venv, "bin")}:${PATH}`;
  }
  return { mounts, workingDir, env: { PATH: path, HOME: "/home/sandbox", HOSTNAME: pod.spec.hostname ?? pod.metadata.name, ...env }, argv };
}

/** 127.0.0.1 for localhost, the pod's own hostname, and every pod name of its Job under its subdomain. */
export async function hostsFile(api, pod) {
  const ns = pod.metadata.namespace;
  const names = new Set([pod.spec.hostname ?? pod.metadata.name]);
  const job = pod.metadata.labels?.["batch.kubernetes.io/job-name"] ?? pod.metadata.labels?.["job-name"];
  const sub = pod.spec.subdomain;
  if (job && sub) {
    const got = await api("GET", `/apis/batch/v1/namespaces/${ns}/jobs/${job}`);
    const n = got.body?.spec?.completions ?? 1;
    for (let i = 0; i < n; i++) for (const suffix of ["", `.${sub}`, `.${sub}.${ns}.svc`, `.${sub}.${ns}.svc.cluster.local`]) names.add(`${job}-${i}${suffix}`);
  }
  return `127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.0.1\t${[...names].join(" ")}\n`;
}

async function patchStatus(api, pod, status) {
  return api("PATCH", `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/status`, { status }, "application/merge-patch+json");
}

/**
 * Once kwok has made the pod Running: the command inside the pod's namespaces (as `uid`), its
 * output in `log`, and the pod's phase from its exit. Resolves with the exit code.
 */
export async function runContainer(api, pod, c, o) {
  const { namespace, name } = pod.metadata;
  for (let i = 0; ; i++) {
    const got = await api("GET", `/api/v1/namespaces/${namespace}/pods/${name}`);
    if (got.status === 404 || got.body?.metadata?.deletionTimestamp) return null;
    if (got.body?.status?.phase === "Running") break;
    if (i > 600) throw new Error("kwok did not make the pod Running in 60 s");
    await sleep(100);
  }
  const container = pod.spec.containers[0];
  const started = new Date().toISOString();
  await patchStatus(api, pod, { containerStatuses: [{ name: container.name, image: container.image, ready: true, started: true, restartCount: 0, state: { running: { startedAt: started } } }] });
  mkdirSync(dirname(o.log), { recursive: true });
  const fd = openSync(o.log, "a");
  const env = Object.entries(c.env).map(([k, v]) => `${k}=${v}`);
  const argv = ["-t", String(o.keeperPid), "-m", "-p", "-i", "-u", "-r", "-S", String(o.uid), "-G", String(o.uid), "--",
    "/usr/bin/env", "-i", ...env, "/bin/sh", "-c", 'cd "$0" && exec "$@"', c.workingDir, ...c.argv];
  console.log(`agent: pod ${namespace}/${name} runs ${c.argv.join(" ")}`);
  const child = spawn("nsenter", argv, { stdio: ["ignore", fd, fd] });
  closeSync(fd);
  const code = await new Promise((resolve) => {
    child.on("error", () => resolve(127));
    child.on("exit", (code, signal) => resolve(code ?? 128 + ({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2 }[signal] ?? 1)));
  });
  const text = existsSync(o.log) ? readFileSync(o.log, "utf8") : "";
  const message = text.slice(-2000);
  console.log(`agent: pod ${namespace}/${name}: its command exited with ${code}`);
  await patchStatus(api, pod, {
    phase: code === 0 ? "Succeeded" : "Failed",
    conditions: [{ type: "Ready", status: "False", reason: "PodCompleted", lastTransitionTime: new Date().toISOString() }],
    containerStatuses: [{ name: container.name, image: container.image, ready: false, started: false, restartCount: 0, state: { terminated: { exitCode: code, reason: code === 0 ? "Completed" : "Error", message, startedAt: started, finishedAt: new Date().toISOString() } } }],
  }).catch(() => undefined);
  return code;
}
