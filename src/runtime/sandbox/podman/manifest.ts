/**
 * Adapts the kubernetes provider's Pod to `podman kube play` on this host (pure). Only what podman
 * needs changes: no ownerReferences or namespace (there is no API server), the emptyDir volumes
 * become hostPath directories the runner can read, the host's node is mounted read-only, and the
 * proxy arrives through its Unix socket and a forwarder container on the pod's own loopback (the
 * pod is played with `--network none`, so it has nothing else).
 */
import type { Manifest } from "../kubernetes/objects.js";

/** Where a podman sandbox sees the host's node (read-only). */
export const HOST_NODE_PATH = "/usr/local/bin/node";
import { PROXY_SOCKET_IN_SANDBOX, SANDBOX_CONTAINER } from "../layout.js";

export interface PodmanAdaptation {
  workspaceHost: string;
  homeHost: string;
  tmpHost: string;
  /** Host node binary, mounted at /usr/local/bin/node. */
  nodeHost?: string;
  /** Host Unix socket of the proxy and the in-pod port that forwards to it. */
  proxy?: { socketHost: string; port: number };
  extraMounts?: { hostPath: string; sandboxPath: string; readOnly: boolean }[];
}

export const FORWARDER_CONTAINER = "proxy-forwarder";

type Obj = Record<string, unknown>;

export function adaptPodForPodman(pod: Manifest, a: PodmanAdaptation): Manifest {
  const copy = structuredClone(pod) as Manifest;
  const metadata = { ...copy.metadata };
  delete metadata.ownerReferences;
  delete metadata.namespace;
  copy.metadata = metadata;
  const spec = copy.spec as Obj;
  const hostDirs: Record<string, string> = { workspace: a.workspaceHost, home: a.homeHost, tmp: a.tmpHost };
  const volumes = ((spec.volumes as Obj[]) ?? []).map((v) => {
    const host = hostDirs[String(v.name)];
    return host ? { name: v.name, hostPath: { path: host, type: "Directory" } } : v;
  });
  const containers: Obj[] = (spec.containers as Obj[]).map((c) => ({ ...c, volumeMounts: [...((c.volumeMounts as Obj[]) ?? [])] }));
  const sandbox = containers.find((c) => c.name === SANDBOX_CONTAINER);
  if (!sandbox) throw new Error(`pod has no "${SANDBOX_CONTAINER}" container`);
  const mounts = sandbox.volumeMounts as Obj[];
  if (a.nodeHost) {
    volumes.push({ name: "host-node", hostPath: { path: a.nodeHost, type: "File" } });
    mounts.push({ name: "host-node", mountPath: HOST_NODE_PATH, readOnly: true });
  }
  (a.extraMounts ?? []).forEach((m, i) => {
    volumes.push({ name: `extra-${i}`, hostPath: { path: m.hostPath } });
    mounts.push({ name: `extra-${i}`, mountPath: m.sandboxPath, readOnly: m.readOnly });
  });
  if (a.proxy) {
    volumes.push({ name: "proxy-socket", hostPath: { path: a.proxy.socketHost, type: "Socket" } });
    containers.push({
      name: FORWARDER_CONTAINER,
      image: sandbox.image,
      imagePullPolicy: sandbox.imagePullPolicy,
      command: ["socat", `TCP-LISTEN:${a.proxy.port},bind=127.0.0.1,reuseaddr,fork`, `UNIX-CONNECT:${PROXY_SOCKET_IN_SANDBOX}`],
      securityContext: sandbox.securityContext,
      volumeMounts: [{ name: "proxy-socket", mountPath: PROXY_SOCKET_IN_SANDBOX, readOnly: true }],
    });
  }
  copy.spec = { ...spec, containers, volumes };
  return copy;
}

export function podmanContainerName(podName: string, container = SANDBOX_CONTAINER): string {
  return `${podName}-${container}`;
}
