/**
 * The `podman` provider: plays the very Pod manifest the kubernetes provider creates
 * (src/runtime/k8s/manifests.ts), adapted only where podman differs (podman-manifest.ts), with
 * `podman kube play --network none`. Commands run with `podman exec`; destroy stops and removes
 * the pod. The image is built offline by scripts/build-image.sh.
 */
import { chmod, chown, lstat, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { buildSandboxPod, podName, type RolloutIdentity } from "../k8s/manifests.js";
import { findExecutable } from "./local-host.js";
import { adaptPodForPodman, podmanContainerName } from "./podman-manifest.js";
import { preparePodmanCli, runPodman, type PodmanCli } from "./podman-cli.js";
import { PodmanSandbox } from "./podman-sandbox.js";
import { waitForListenerCommand } from "./container-command.js";
import {
  baseEnvironment,
  DEFAULT_PROXY_PORT,
  networkOf,
  SANDBOX_GID,
  SANDBOX_HOME,
  SANDBOX_UID,
  type Sandbox,
  type SandboxProvider,
  type SandboxSpec,
} from "./provider.js";
import { SandboxError, messageOf } from "./sandbox-error.js";

export const DEFAULT_PODMAN_IMAGE = "localhost/reins-sandbox:1";

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

export class PodmanSandboxProvider implements SandboxProvider {
  readonly type = "podman" as const;
  readonly rootDir: string;
  private cli: Promise<PodmanCli> | null = null;
  private readonly live = new Set<PodmanSandbox>();

  constructor(private readonly options: PodmanProviderOptions = {}) {
    this.rootDir = path.resolve(options.rootDir ?? path.join(os.tmpdir(), "reins-podman"));
  }

  private prepare(): Promise<PodmanCli> {
    if (!this.cli) {
      this.cli = (async () => {
        const binary = this.options.podmanPath ?? findExecutable("podman");
        if (!binary) throw new Error("podman is not installed");
        await mkdir(this.rootDir, { recursive: true });
        return preparePodmanCli(binary, this.rootDir, this.options.containersConf);
      })();
      this.cli.catch(() => (this.cli = null));
    }
    return this.cli;
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    let cli: PodmanCli;
    try {
      cli = await this.prepare();
    } catch (error) {
      throw new SandboxError("create-failed", spec.id, messageOf(error), "apt-get install -y podman runc catatonit; then scripts/build-image.sh");
    }
    const network = networkOf(spec);
    if (network === "proxy-only") {
      const info = spec.proxySocketPath ? await lstat(spec.proxySocketPath).catch(() => null) : null;
      if (!info?.isSocket()) {
        throw new SandboxError("create-failed", spec.id, `network proxy-only needs an existing proxySocketPath (got ${spec.proxySocketPath ?? "none"})`, "create the socket (createSocketBridge) before the sandbox");
      }
    }
    const image = spec.image ?? this.options.image ?? DEFAULT_PODMAN_IMAGE;
    const stateDir = await mkdtemp(path.join(this.rootDir, "pod-"));
    const identity: RolloutIdentity = { runId: spec.runId, rolloutId: spec.id, task: spec.task, harness: spec.harness };
    const name = podName(identity);
    const dirs = { workspace: path.join(stateDir, "workspace"), home: path.join(stateDir, "home"), tmp: path.join(stateDir, "tmp") };
    const port = spec.proxyPort ?? DEFAULT_PROXY_PORT;
    try {
      for (const dir of Object.values(dirs)) {
        await mkdir(dir);
        await chown(dir, SANDBOX_UID, SANDBOX_GID);
      }
      await chmod(dirs.tmp, 0o1777);
      const env = { ...baseEnvironment(SANDBOX_HOME), ...(spec.env ?? {}) };
      const pod = buildSandboxPod({
        identity,
        namespace: "default",
        image,
        resources: spec.resources,
        deadlineSeconds: spec.timeoutSeconds,
        env,
        labels: spec.labels,
      });
      const played = adaptPodForPodman(pod, {
        workspaceHost: dirs.workspace,
        homeHost: dirs.home,
        tmpHost: dirs.tmp,
        nodeHost: this.options.mountHostNode === false ? undefined : process.execPath,
        proxy: network === "proxy-only" ? { socketHost: spec.proxySocketPath as string, port } : undefined,
        extraMounts: (spec.mounts ?? []).map((m) => ({ hostPath: m.hostPath, sandboxPath: m.sandboxPath, readOnly: m.readOnly !== false })),
      });
      const manifestPath = path.join(stateDir, "pod.yaml");
      await writeFile(manifestPath, stringify(played));
      const play = await runPodman(cli, ["kube", "play", "--network", "none", "--replace", manifestPath], this.options.readyTimeoutMs ?? 120_000);
      if (play.code !== 0) {
        throw new SandboxError("create-failed", spec.id, `podman kube play failed: ${play.stderr.trim() || play.stdout.trim()}`, "check the image (scripts/build-image.sh) and podman's setup");
      }
      const sandbox = new PodmanSandbox(
        {
          spec,
          cli,
          podName: name,
          container: podmanContainerName(name),
          stateDir,
          dirs,
          env,
          manifest: played,
          fileTransfer: this.options.fileTransfer ?? "host",
          proxyUrl: network === "proxy-only" ? `http://127.0.0.1:${port}` : undefined,
        },
        () => this.live.delete(sandbox),
      );
      this.live.add(sandbox);
      if (network === "proxy-only") {
        const ready = await sandbox.exec(waitForListenerCommand(port), { cwd: "/" }).catch((e: unknown) => e);
        if (!(ready && typeof ready === "object" && "exitCode" in ready && ready.exitCode === 0)) {
          await sandbox.destroy();
          throw new SandboxError("create-failed", spec.id, `the proxy forwarder did not listen on 127.0.0.1:${port}`, "check that socat is in the image");
        }
      }
      return sandbox;
    } catch (error) {
      await runPodman(cli, ["pod", "rm", "-f", name]).catch(() => undefined);
      await rm(stateDir, { recursive: true, force: true }).catch(() => undefined);
      if (error instanceof SandboxError) throw error;
      throw new SandboxError("create-failed", spec.id, `cannot create the pod: ${messageOf(error)}`, "", { cause: error });
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.live].map((s) => s.destroy()));
  }
}
