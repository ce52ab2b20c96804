/**
 * What every sandbox looks like from inside, whatever the provider: the one place these values are
 * declared (pure). The local keeper, the Kubernetes Pod, its podman adaptation and the verifier
 * all read them from here.
 */

/** The writable workspace. */
export const SANDBOX_WORKSPACE = "/workspace";
/** The private HOME. */
export const SANDBOX_HOME = "/home/sandbox";
/** The private /tmp. */
export const SANDBOX_TMP = "/tmp";
/** The writable directories files may be written to and read from, workspace first. */
export const SANDBOX_ROOTS: readonly string[] = [SANDBOX_WORKSPACE, SANDBOX_HOME, SANDBOX_TMP];
/** The sandbox user: never root. */
export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;
/** The user of verifier sandboxes where the provider can choose it (local): never an agent's uid. */
export const VERIFIER_UID = 1999;
export const VERIFIER_GID = 1999;
/**
 * Kills every process of the sandbox the caller may signal except pid 1 (the keeper) and itself.
 * One kill(-1) already reaches a child being forked (the kernel fails a fork whose parent got a
 * fatal signal before the child was listed); the second round is for good measure.
 */
export const KILL_ALL_SCRIPT = "kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null; exit 0";
/** The container that runs commands in a sandbox Pod (kubernetes, podman). */
export const SANDBOX_CONTAINER = "sandbox";
/** The image podman and kubernetes use when none is given (scripts/build-image.sh builds it). */
export const DEFAULT_SANDBOX_IMAGE = "localhost/reins-sandbox:1";
/** The loopback port inside a sandbox that forwards to the proxy. */
export const DEFAULT_PROXY_PORT = 18080;
/** Where the proxy's per-rollout Unix socket is bound inside a sandbox (local, podman). */
export const PROXY_SOCKET_IN_SANDBOX = "/run/reins/proxy.sock";
/** Default cap of each captured output stream (the tail is kept). */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/** The PATH of every command, inside a sandbox and for the runner's own helper processes. */
export const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The limits of a sandbox whose spec names none (the compiler's defaults, for plans and callers without them). */
export const DEFAULT_RESOURCES = { cpu: "1", memoryMiB: 2048, pids: 1024, diskMiB: 1024, openFiles: 4096, cpuSeconds: 3600 } as const;

export interface Limits {
  /** CPUs at once (cores, fractional). */
  cpus: number;
  memoryMiB: number;
  pids: number;
  diskMiB: number;
  openFiles: number;
  cpuSeconds: number;
}

/** Every limit of a sandbox, defaults filled in; `cpu` as a number of cores ("500m" → 0.5). */
export function limitsOf(
  resources: Partial<{ cpu: string; memoryMiB: number; pids: number; diskMiB: number; openFiles: number; cpuSeconds: number }> = {},
): Limits {
  const d = DEFAULT_RESOURCES;
  const cpu = resources.cpu ?? d.cpu;
  const cpus = cpu.endsWith("m") ? Number(cpu.slice(0, -1)) / 1000 : Number(cpu);
  return {
    cpus: Number.isFinite(cpus) && cpus > 0 ? cpus : 1,
    memoryMiB: resources.memoryMiB ?? d.memoryMiB,
    pids: resources.pids ?? d.pids,
    diskMiB: resources.diskMiB ?? d.diskMiB,
    openFiles: resources.openFiles ?? d.openFiles,
    cpuSeconds: resources.cpuSeconds ?? d.cpuSeconds,
  };
}

/** The minimal environment every command starts from. */
export function baseEnvironment(home = SANDBOX_HOME): Record<string, string> {
  return { PATH: SYSTEM_PATH, HOME: home, TMPDIR: SANDBOX_TMP, LANG: "C.UTF-8" };
}

/** The working directory of a command: absolute in-sandbox path; relative ones resolve against the workspace. */
export function resolveCwd(cwd: string | undefined): string {
  if (!cwd) return SANDBOX_WORKSPACE;
  return cwd.startsWith("/") ? cwd : `${SANDBOX_WORKSPACE}/${cwd}`.replace(/\/+$/, "");
}
