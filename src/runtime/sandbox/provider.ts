/**
 * The sandbox interface every provider implements (local, podman, kubernetes).
 *
 * A sandbox is one isolated place for one rollout: a writable workspace, a private HOME and /tmp,
 * the proxy reachable and nothing else on the network. Processes started in it never outlive
 * `destroy()`. Infrastructure failures throw `SandboxError`; a command that exits non-zero is an
 * ordinary `ExecResult`.
 */

export type SandboxProviderType = "local" | "podman" | "kubernetes";

export type SandboxNetwork = "proxy-only" | "none";

export interface SandboxMount {
  /** Absolute path on the host (local, podman) or a hostPath on the node (kubernetes). */
  hostPath: string;
  /** Absolute path inside the sandbox. */
  sandboxPath: string;
  /** Default true. */
  readOnly?: boolean;
}

export interface SandboxSpec {
  /** Unique within the run; usually the rollout id. Used in names and labels. */
  id: string;
  /** The run this sandbox belongs to (labels, owner object, cleanup). */
  runId: string;
  /** Task and harness names, for labels only. */
  task?: string;
  harness?: string;
  /** Container image (podman, kubernetes). The local provider uses the host's system directories. */
  image?: string;
  resources?: { cpu: string; memoryMiB: number };
  /** Default "proxy-only" when a proxy is given, "none" otherwise. */
  network?: SandboxNetwork;
  /**
   * Host Unix socket that reaches the proxy (local, podman). Inside the sandbox it is served on
   * `http://127.0.0.1:<proxyPort>`. It must exist before `create` and must not be re-created while
   * the sandbox lives (the socket file itself is bound in, never its directory).
   */
  proxySocketPath?: string;
  /** Loopback port inside the sandbox that forwards to the proxy; default 18080. */
  proxyPort?: number;
  /** Kubernetes: the proxy's URL as seen from a pod (e.g. a Service URL). */
  proxyUrl?: string;
  /** Environment given to every command (plus the provider's minimal PATH/HOME/TMPDIR/LANG). */
  env?: Record<string, string>;
  /** Extra binds (harness caches, toolchains). Read-only unless `readOnly: false`. */
  mounts?: SandboxMount[];
  /** Extra host paths to hide (local): directories become empty, files read as empty. */
  hidePaths?: string[];
  /** Upper bound on the sandbox's life (kubernetes activeDeadlineSeconds; informative elsewhere). */
  timeoutSeconds?: number;
  /** Extra labels (kubernetes, podman). */
  labels?: Record<string, string>;
}

export interface ExecOptions {
  /** In-sandbox working directory; default the workspace. */
  cwd?: string;
  /** Added to the sandbox env. Nothing from the runner's environment reaches a command. */
  env?: Record<string, string>;
  /** At expiry the command's whole process tree is killed and `timedOut` is true. */
  timeoutMs?: number;
  stdin?: string | Uint8Array;
  /** Every output chunk as it arrives (not capped). */
  onOutput?: (stream: "stdout" | "stderr", chunk: Buffer) => void;
  /** Cap for the `stdout`/`stderr` strings in the result; the tail is kept. Default 1 MiB. */
  maxOutputBytes?: number;
}

export interface ExecResult {
  /** Exit status; 128+n when the command died of signal n inside the sandbox; null when killed by the runner. */
  exitCode: number | null;
  /** Set when the runner killed the command (timeout or kill()), e.g. "SIGKILL". */
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  timedOut: boolean;
  durationMs: number;
}

/** A long-running command (a harness). */
export interface SandboxProcess {
  /** Resolves when the command and everything it started have ended. */
  wait(): Promise<ExecResult>;
  /** Kills the command's whole process tree; resolves once it is gone. */
  kill(): Promise<void>;
}

export interface SandboxFile {
  /** Relative to the workspace, or absolute under the workspace or HOME. */
  path: string;
  content: string | Uint8Array;
  /** Default 0o644. */
  mode?: number;
}

export interface Sandbox {
  readonly id: string;
  readonly provider: SandboxProviderType;
  /** The workspace as seen inside the sandbox, e.g. "/workspace". */
  readonly workspacePath: string;
  /** HOME inside the sandbox. */
  readonly homePath: string;
  /** The workspace on the runner's host, where the provider has one (local, podman). */
  readonly workspaceHostPath?: string;
  /** The proxy as seen from inside, e.g. "http://127.0.0.1:18080"; absent without network. */
  readonly proxyUrl?: string;
  exec(argv: string[], options?: ExecOptions): Promise<ExecResult>;
  spawn(argv: string[], options?: ExecOptions): SandboxProcess;
  writeFiles(files: SandboxFile[]): Promise<void>;
  readFile(path: string): Promise<Buffer>;
  /** Regular files under `dir` (default the workspace), relative to it, sorted. */
  listFiles(dir?: string): Promise<string[]>;
  /** False once the sandbox died or was destroyed. */
  alive(): Promise<boolean>;
  /** Kills every process of the sandbox and removes its state. Idempotent. */
  destroy(): Promise<void>;
}

export interface SandboxProvider {
  readonly type: SandboxProviderType;
  create(spec: SandboxSpec): Promise<Sandbox>;
  /** Deletes everything left of one run (kubernetes: the run's owner object, cascading). */
  cleanupRun?(runId: string): Promise<void>;
  /** Destroys every sandbox this provider still holds. */
  close(): Promise<void>;
}

export const DEFAULT_PROXY_PORT = 18080;
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
export const SANDBOX_WORKSPACE = "/workspace";
export const SANDBOX_HOME = "/home/sandbox";
export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;

/** The minimal environment every command starts from. */
export function baseEnvironment(home: string): Record<string, string> {
  return {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: home,
    TMPDIR: "/tmp",
    LANG: "C.UTF-8",
  };
}

export function networkOf(spec: SandboxSpec): SandboxNetwork {
  if (spec.network) return spec.network;
  return spec.proxySocketPath || spec.proxyUrl ? "proxy-only" : "none";
}

/** The working directory of a command: absolute in-sandbox path; relative ones resolve against the workspace. */
export function resolveCwd(cwd: string | undefined): string {
  if (!cwd) return SANDBOX_WORKSPACE;
  return cwd.startsWith("/") ? cwd : `${SANDBOX_WORKSPACE}/${cwd}`.replace(/\/+$/, "");
}
