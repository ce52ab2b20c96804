/** One played pod (see provider.ts): commands through `podman exec`, files through its hostPath directories or exec. */
import type { ChildProcess } from "node:child_process";
import { hostDirsOf, type StateDirs } from "../base-provider.js";
import { BaseSandbox, type CommandRequest } from "../base-sandbox.js";
import type { OutputSink, RunningCommand } from "../command.js";
import { KILL_ALL_BUT_KEEPER, KILL_ALL_REPEATED, wrapForContainer } from "../container-command.js";
import { SandboxError } from "../sandbox-error.js";
import { execTransport } from "../files/exec-transport.js";
import { hostTransport } from "../files/host-files.js";
import type { FileTransport } from "../files/transport.js";
import { startHostProcess } from "../host/process-runner.js";
import { signalQuietly, sleep } from "../host/process-tree.js";
import type { Manifest } from "../kubernetes/objects.js";
import { SANDBOX_GID, SANDBOX_UID } from "../layout.js";
import { removeState } from "../local/state.js";
import { runPodman, type PodmanCli } from "./cli.js";

export interface PodmanSandboxState {
  id: string;
  cli: PodmanCli;
  podName: string;
  container: string;
  /** The provider's root (removeState's records). */
  stateRoot: string;
  stateDir: string;
  dirs: StateDirs;
  env: Record<string, string>;
  /** The manifest as played. */
  manifest: Manifest;
  fileTransfer: "host" | "exec";
  proxyUrl?: string;
  /** Where the host's node is mounted, when it is. */
  nodePath?: string;
}

/** `podman exec` exits 125 when it could not run the command at all. */
const PODMAN_EXEC_FAILED = 125;

export class PodmanSandbox extends BaseSandbox {
  readonly provider = "podman" as const;
  get nodePath(): string | undefined {
    return this.state.nodePath;
  }
  /** The workspace on this host (for tests and diagnostics; readers go through the contract). */
  readonly workspaceHostPath: string;
  protected readonly files: FileTransport;
  private removed = false;

  constructor(readonly state: PodmanSandboxState) {
    super(state.id, state.env, state.proxyUrl);
    this.workspaceHostPath = state.dirs.workspace;
    this.files =
      state.fileTransfer === "exec"
        ? execTransport((argv, options) => this.exec(argv, options))
        : hostTransport(hostDirsOf(state.dirs), { uid: SANDBOX_UID, gid: SANDBOX_GID });
  }

  get podName(): string {
    return this.state.podName;
  }

  protected async probe(): Promise<boolean> {
    const r = await runPodman(this.state.cli, ["container", "inspect", "-f", "{{.State.Running}}", this.state.container]);
    return r.code === 0 && r.stdout.trim() === "true";
  }

  protected startCommand(request: CommandRequest, sink: OutputSink): RunningCommand {
    const command = wrapForContainer(request.argv, request.cwd, request.env);
    const interactive = request.stdin !== undefined ? ["-i"] : [];
    const argv = [this.state.cli.binary, "exec", ...interactive, this.state.container, ...command];
    const killTree = (child: ChildProcess): Promise<void> => this.killInContainer(child);
    const host = startHostProcess(argv, { env: this.state.cli.env, stdin: request.stdin, newSession: false, killTree }, sink);
    return {
      done: host.done.then((end) => {
        if ("failure" in end) return { failure: `cannot run podman: ${end.failure}` };
        return end.exitCode === PODMAN_EXEC_FAILED ? { failure: "podman exec failed" } : end;
      }),
      kill: host.kill,
      release: () => {
        if (host.child.pid !== undefined) signalQuietly(host.child.pid);
      },
    };
  }

  /**
   * Killing the podman client would leave the command running in the container, so the command is
   * killed there (with everything else but the keeper) until the client sees it end. Repeated,
   * because a command whose exec session is still starting is not there to be killed yet.
   */
  private async killInContainer(child: ChildProcess): Promise<void> {
    const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
    for (let round = 0; round < 20 && !exited(); round++) {
      await runPodman(this.state.cli, ["exec", this.state.container, ...KILL_ALL_BUT_KEEPER], 30_000);
      for (let i = 0; i < 10 && !exited(); i++) await sleep(25);
    }
    if (!exited() && child.pid !== undefined) signalQuietly(child.pid);
  }

  protected async killProcesses(): Promise<void> {
    const r = await runPodman(this.state.cli, ["exec", this.state.container, ...KILL_ALL_REPEATED], 60_000);
    if (r.code !== 0)
      throw new SandboxError(
        "exec-failed",
        this.id,
        `cannot stop the sandbox's processes: ${r.stderr.trim().slice(-300) || `podman exited ${r.code}`}`,
        this.execHint,
      );
  }

  protected async stop(): Promise<void> {
    const { cli, podName } = this.state;
    await runPodman(cli, ["pod", "stop", "-t", "0", podName], 60_000);
    this.removed = (await runPodman(cli, ["pod", "rm", "-f", podName], 60_000)).code === 0;
  }

  protected override async removeState(): Promise<void> {
    if (this.removed) await removeState(this.state.stateRoot, this.state.stateDir);
  }
}
