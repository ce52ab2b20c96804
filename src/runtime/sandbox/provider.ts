/**
 * The sandbox contract every provider implements (local, podman, kubernetes; see docs/sandboxes.md).
 *
 * A sandbox is one isolated place for one rollout: a writable workspace, a private HOME and /tmp,
 * the proxy reachable and nothing else on the network. Processes started in it never outlive
 * `destroy()`. Infrastructure failures throw `SandboxError`; a command that exits non-zero is an
 * ordinary `ExecResult`. Files move in and out only through this contract, never through a host
 * path, so whoever reads a sandbox (the executor, the verifier) works the same on every provider.
 */

import type { Readable } from "node:stream";

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

/**
 * What one sandbox may use (see the Sandbox spec's `resources`). Local: cgroups (pids, memory, cpu)
 * where this host has them, rlimits always, a size-capped tmpfs under the workspace, HOME and /tmp.
 */
export interface SandboxResources {
  /** CPUs at once, e.g. "1" or "500m". */
  cpu: string;
  memoryMiB: number;
  /** Processes and threads at once. */
  pids?: number;
  /** The workspace, HOME and /tmp together. */
  diskMiB?: number;
  /** Open files per process. */
  openFiles?: number;
  /** CPU seconds per process. */
  cpuSeconds?: number;
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
  /** Limits of the sandbox; a missing one takes its default (layout.ts DEFAULT_RESOURCES). */
  resources?: SandboxResources;
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
  /** The image carries everything the harness runs (node, the harness, reins-agent): podman mounts no node of this machine. */
  selfContained?: boolean;
  /** Extra host paths to hide (local): directories become empty, files read as empty. */
  hidePaths?: string[];
  /** Upper bound on the sandbox's life (kubernetes activeDeadlineSeconds; informative elsewhere). */
  timeoutSeconds?: number;
  /** Extra labels (kubernetes, podman). */
  labels?: Record<string, string>;
  /**
   * Whose sandbox this is; default "agent". A "verifier" sandbox runs its commands under a
   * different uid than agents' where the provider can choose the user (local).
   */
  role?: "agent" | "verifier";
}

export interface ExecOptions {
  /** In-sandbox working directory; default the workspace. */
  cwd?: string;
  /** Added to the sandbox env. Nothing from the runner's environment reaches a command. */
  env?: Record<string, string>;
  /** At expiry the command's whole process tree is killed and `timedOut` is true. */
  timeoutMs?: number;
  /** What the command reads: all of it at once, or a stream fed while it runs (an MCP server's requests). */
  stdin?: string | Uint8Array | Readable;
  /** Every output chunk as it arrives (not capped). */
  onOutput?: (stream: "stdout" | "stderr", chunk: Buffer) => void;
  /** Cap for the `stdout`/`stderr` strings in the result; the tail is kept. Default 1 MiB. */
  maxOutputBytes?: number;
}

/** How a command ended: in a sandbox, and for the runner's own host processes (verifiers) alike. */
export interface ExecResult {
  /** Exit status; 128+n when the command died of signal n; null when the runner killed it or it never started. */
  exitCode: number | null;
  /** Set when the runner killed the command (timeout, kill(), destroy()): "SIGKILL". */
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  timedOut: boolean;
  durationMs: number;
  /** Host processes only: the command could not be started at all (e.g. the binary is missing). */
  spawnError?: string;
}

/** A long-running command (a harness). */
export interface SandboxProcess {
  /** Resolves when the command and everything it started have ended. */
  wait(): Promise<ExecResult>;
  /** Kills the command's whole process tree; resolves once it is gone. */
  kill(): Promise<void>;
}

export interface SandboxFile {
  /** Relative to the workspace, or absolute under the workspace, HOME or /tmp. */
  path: string;
  content: string | Uint8Array;
  /** Default 0o644. */
  mode?: number;
}

/** A symlink written into a sandbox: made as a link with `target` as its text, never followed. */
export interface SandboxLink {
  /** Relative to the workspace, or absolute under the workspace, HOME or /tmp. */
  path: string;
  /** The link's text, kept as given (relative or absolute; it may dangle). */
  target: string;
}

/** A directory written into a sandbox (parents created); one that exists is kept. */
export interface SandboxDirectory {
  path: string;
  /** Default 0o755. */
  mode?: number;
}

/** What a write makes besides regular files: directories first, then links, after the files. */
export interface SandboxWriteExtras {
  directories?: SandboxDirectory[];
  links?: SandboxLink[];
}

/** Bounds on a copy out of a sandbox (a workspace is what the agent made of it). */
export interface CopyLimits {
  /** Bytes copied of one file; a larger file keeps its size, the rest reads as zeros. Default 16 MiB. */
  maxFileBytes?: number;
  /** Entries (files, directories, links) copied; default 200,000. */
  maxEntries?: number;
  /** Bytes copied in all; default 2 GiB. */
  maxBytes?: number;
  /** How long the copy may take; default 10 minutes. */
  timeoutMs?: number;
  /** Directory levels below the copied directory; default 256. */
  maxDepth?: number;
  /** Characters of a path below the copied directory; default 3,072 (the host's own paths stay within PATH_MAX). */
  maxPathChars?: number;
}

export interface CopyReport {
  files: number;
  directories: number;
  symlinks: number;
  /** Bytes of file content written on the host. */
  bytes: number;
  /** Files larger than maxFileBytes: only their beginning was copied (their size is kept). */
  truncated: string[];
  /** Entries left out, with why (special files, unsafe names). */
  skipped: { path: string; why: string }[];
  /** Set when a limit stopped the copy before the end: what was left out is unknown. */
  incomplete?: string;
}

export interface Sandbox {
  readonly id: string;
  readonly provider: SandboxProviderType;
  /** The workspace as seen inside the sandbox, e.g. "/workspace". */
  readonly workspacePath: string;
  /** HOME inside the sandbox. */
  readonly homePath: string;
  /** The proxy as seen from inside, e.g. "http://127.0.0.1:18080"; absent without network. */
  readonly proxyUrl?: string;
  /** The host's node as seen from inside (local: its own path; podman: /usr/local/bin/node); absent when the sandbox has only its image's `node` on PATH. */
  readonly nodePath?: string;
  exec(argv: string[], options?: ExecOptions): Promise<ExecResult>;
  spawn(argv: string[], options?: ExecOptions): SandboxProcess;
  /**
   * Copies files in, owned by the sandbox user; parent directories are created. `extras` adds
   * directories and symlinks (made after the files, owned by the sandbox user); a path whose
   * parent is a link, or a link whose name exists, is refused: nothing is written through a link.
   */
  writeFiles(files: SandboxFile[], extras?: SandboxWriteExtras): Promise<void>;
  /** Copies the regular files under a host directory into `dir` (in-sandbox path). */
  copyIn(hostDir: string, dir: string): Promise<void>;
  readFile(path: string): Promise<Buffer>;
  /** Regular files under `dir` (default the workspace), relative to it, sorted. */
  listFiles(dir?: string): Promise<string[]>;
  /**
   * Copies the tree under `dir` (default the workspace) into the empty host directory `hostDir`:
   * regular files, directories, and symlinks as links (never followed). Special files are skipped.
   */
  copyOut(dir: string, hostDir: string, limits?: CopyLimits): Promise<CopyReport>;
  /** False once the sandbox died or was destroyed. */
  alive(): Promise<boolean>;
  /**
   * Kills every process of the sandbox (daemons and double-forked children included) but keeps
   * the sandbox and its files: after it resolves, nothing the harness started can change them.
   */
  stopProcesses(): Promise<void>;
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
