/**
 * The `podman` provider: plays the very Pod manifest the kubernetes provider creates
 * (kubernetes/manifests.ts), adapted only where podman differs (manifest.ts), with
 * `podman kube play --network none`. Commands run with `podman exec`; destroy stops and removes
 * the pod. The image is built offline by scripts/build-image.sh.
 *
 * Limits: cpu and memory in the Pod's resources, pids, open files and CPU seconds through the
 * sandbox's own containers.conf (pids_limit, ulimits), and, run as root, the workspace, HOME and
 * /tmp as tmpfs capped at diskMiB each (as the local provider).
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { BaseSandboxProvider, hostSetup, proxySocketFor, type StateDirs } from "../base-provider.js";
import { waitForListenerCommand } from "../container-command.js";
import { findExecutable } from "../host/executables.js";
import { buildSandboxPod, podName, type RolloutIdentity } from "../kubernetes/manifests.js";
import { limitPidsOf } from "../host/cgroups.js";
import { runHostCommand } from "../host/process-runner.js";
import { baseEnvironment, DEFAULT_PROXY_PORT, DEFAULT_SANDBOX_IMAGE, limitsOf, SANDBOX_GID, SANDBOX_HOME, SANDBOX_UID } from "../layout.js";
import { pruneStale } from "../local/host.js";
import { OWNER_FILE, ownerRecord } from "../local/owner.js";
import { layOutState, removeState } from "../local/state.js";
import type { SandboxSpec } from "../provider.js";
import { messageOf, SandboxError } from "../sandbox-error.js";
import { preparePodmanCli, runPodman, sandboxContainersConf, type PodmanCli } from "./cli.js";
import { adaptPodForPodman, HOST_NODE_PATH, podmanContainerName } from "./manifest.js";
import { PodmanSandbox } from "./sandbox.js";

export interface PodmanProviderOptions {
  rootDir?: string;
  image?: string;
  podmanPath?: string;
  /** A containers.conf to use instead of the one written with the fixes this host needs. */
  containersConf?: string;
  /** Mount the host's node at /usr/local/bin/node (read-only). Default true. */
  mountHostNode?: boolean;
  /** "host": file access through the hostPath workspace (default); "exec": tar/base64 over exec, as on kubernetes. */
  fileTransfer?: "host" | "exec";
  readyTimeoutMs?: number;
}

/** The file in a pod's state directory that names the pod. */
const POD_NAME_FILE = "pod";

/** Removes the pod whose state directory is `stateDir` (one a runner that no longer exists left). */
async function removePodOf(cli: PodmanCli, stateDir: string): Promise<void> {
  const name = (await readFile(path.join(stateDir, POD_NAME_FILE), "utf8").catch(() => "")).trim();
  if (name) await runPodman(cli, ["pod", "rm", "-f", "-t", "0", name], 60_000);
}

export class PodmanSandboxProvider extends BaseSandboxProvider {
  readonly type = "podman" as const;
  readonly rootDir: string;
  /**
   * This provider's own part of its pods' run id. A run id names a plan, and all podman runs on a
   * host share one namespace of pod names: without it, a second run of the same plan (another
   * terminal, a retry while the first still stops) would `--replace` the first run's pods.
   */
  readonly instance = randomBytes(3).toString("hex");
  private readonly stamp = ownerRecord();
  private readonly cli: (sandboxId: string) => Promise<PodmanCli>;

  constructor(private readonly options: PodmanProviderOptions = {}) {
    super();
    this.rootDir = path.resolve(options.rootDir ?? path.join(os.tmpdir(), "reins-podman"));
    this.cli = hostSetup(
      async () => {
        const binary = options.podmanPath ?? findExecutable("podman");
        if (!binary) throw new Error("podman is not installed");
        await mkdir(this.rootDir, { recursive: true });
        const cli = await preparePodmanCli(binary, this.rootDir, options.containersConf);
        await pruneStale(this.rootDir, (stateDir) => removePodOf(cli, stateDir));
        return cli;
      },
      messageOf,
      "apt-get install -y podman runc catatonit; then scripts/build-image.sh",
    );
  }

  protected async createSandbox(spec: SandboxSpec): Promise<PodmanSandbox> {
    const cli = await this.cli(spec.id);
    const socket = proxySocketFor(spec);
    const stateDir = await mkdtemp(path.join(this.rootDir, "pod-"));
    const identity: RolloutIdentity = { runId: `${spec.runId}-${this.instance}`, rolloutId: spec.id, task: spec.task, harness: spec.harness };
    const name = podName(identity);
    const port = spec.proxyPort ?? DEFAULT_PROXY_PORT;
    try {
      // Whose pod this is: a later runner removes it and its state if this one dies without closing.
      await writeFile(path.join(stateDir, POD_NAME_FILE), name);
      await writeFile(path.join(stateDir, OWNER_FILE), this.stamp);
      const limits = limitsOf(spec.resources);
      const state = layOutState(stateDir, { uid: SANDBOX_UID, gid: SANDBOX_GID, limits, cap: process.getuid?.() === 0 ? "host" : "none", cgroups: null });
      const dirs = state.dirs as StateDirs;
      if (state.fstab) {
        const mounted = await runHostCommand(["/usr/bin/mount", "-a", "-T", state.fstab], { env: {}, timeoutMs: 30_000 });
        if (mounted.exitCode !== 0) throw new Error(`cannot mount the sandbox's capped directories: ${mounted.stderr.trim() || mounted.spawnError}`);
      }
      const env = { ...baseEnvironment(SANDBOX_HOME), ...(spec.env ?? {}) };
      const pod = buildSandboxPod({
        identity,
        namespace: "default",
        image: spec.image ?? this.options.image ?? DEFAULT_SANDBOX_IMAGE,
        resources: spec.resources,
        deadlineSeconds: spec.timeoutSeconds,
        env,
        labels: spec.labels,
      });
      const played = adaptPodForPodman(pod, {
        workspaceHost: dirs.workspace,
        homeHost: dirs.home,
        tmpHost: dirs.tmp,
        nodeHost: this.options.mountHostNode === false || spec.selfContained ? undefined : process.execPath,
        proxy: socket ? { socketHost: socket, port } : undefined,
        extraMounts: (spec.mounts ?? []).map((m) => ({ hostPath: m.hostPath, sandboxPath: m.sandboxPath, readOnly: m.readOnly !== false })),
      });
      const manifestPath = path.join(stateDir, "pod.yaml");
      await writeFile(manifestPath, stringify(played));
      let playCli = cli;
      if (!cli.customConf) {
        const conf = path.join(stateDir, "containers.conf");
        await writeFile(conf, sandboxContainersConf(limits));
        playCli = { ...cli, env: { ...cli.env, CONTAINERS_CONF: conf } };
      }
      const play = await runPodman(playCli, ["kube", "play", "--network", "none", "--replace", manifestPath], this.options.readyTimeoutMs ?? 120_000);
      if (play.code !== 0) {
        throw new SandboxError(
          "create-failed",
          spec.id,
          `podman kube play failed: ${play.stderr.trim() || play.stdout.trim()}`,
          "check the image (scripts/build-image.sh) and podman's setup",
        );
      }
      // kube play applies no pids limit of its own: the pod's group gets the sandbox's.
      const podId = /Pod:\s*\n([0-9a-f]{64})/.exec(play.stdout)?.[1];
      if (!cli.customConf && (!podId || !limitPidsOf(podId, limits.pids))) {
        throw new SandboxError(
          "create-failed",
          spec.id,
          `cannot set the pod's pids limit (pod ${podId ?? "id not reported"})`,
          "run podman as root with the cgroupfs or systemd cgroup manager, or give a containers.conf of your own",
        );
      }
      const sandbox = new PodmanSandbox({
        id: spec.id,
        cli,
        podName: name,
        container: podmanContainerName(name),
        stateRoot: this.rootDir,
        stateDir,
        dirs,
        env,
        manifest: played,
        fileTransfer: this.options.fileTransfer ?? "host",
        proxyUrl: socket ? `http://127.0.0.1:${port}` : undefined,
        ...(this.options.mountHostNode === false || spec.selfContained ? {} : { nodePath: HOST_NODE_PATH }),
      });
      if (socket) await this.awaitForwarder(sandbox, spec.id, port);
      return sandbox;
    } catch (error) {
      await runPodman(cli, ["pod", "rm", "-f", name]).catch(() => undefined);
      await removeState(this.rootDir, stateDir).catch(() => undefined);
      throw error;
    }
  }

  private async awaitForwarder(sandbox: PodmanSandbox, id: string, port: number): Promise<void> {
    const ready = await sandbox.exec(waitForListenerCommand(port), { cwd: "/" }).catch(() => null);
    if (ready?.exitCode === 0) return;
    await sandbox.destroy();
    throw new SandboxError("create-failed", id, `the proxy forwarder did not listen on 127.0.0.1:${port}`, "check that socat is in the image");
  }
}
