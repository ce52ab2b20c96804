/**
 * Running the podman CLI with the settings this host needs (platform notes): runc instead of crun
 * (hybrid cgroups), lowered ulimits (root lacks CAP_SYS_RESOURCE); catatonit must be installed for
 * `kube play`'s pause image.
 */
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { runHostCommand } from "../host/process-runner.js";
import { signalQuietly } from "../host/process-tree.js";
import { SYSTEM_PATH } from "../layout.js";

export const CONTAINERS_CONF = `# Written by reins for podman on hosts with hybrid cgroups and no CAP_SYS_RESOURCE.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
`;

/**
 * containers.conf for one sandbox's `kube play`: the host fixes above, with the sandbox's pids
 * limit (the container's pids cgroup) and its open files and CPU seconds as ulimits.
 */
export function sandboxContainersConf(limits: { pids: number; openFiles: number; cpuSeconds: number }): string {
  return `# Written by reins for one sandbox (see CONTAINERS_CONF in cli.ts).
[containers]
default_ulimits = ["nofile=${limits.openFiles}:${limits.openFiles}", "nproc=1024:1024", "cpu=${limits.cpuSeconds}:${limits.cpuSeconds}"]
pids_limit = ${limits.pids}

[engine]
runtime = "runc"
`;
}

export interface PodmanCli {
  binary: string;
  env: Record<string, string>;
  /** A containers.conf was given: it, not the sandbox's limits, decides pids and ulimits. */
  customConf?: boolean;
}

export async function preparePodmanCli(binary: string, stateRoot: string, containersConf?: string): Promise<PodmanCli> {
  let conf = containersConf;
  if (!conf) {
    // Shared by every sandbox of this state root (a dot file, like the local provider's .host files).
    conf = path.join(stateRoot, ".containers.conf");
    await writeFile(conf, CONTAINERS_CONF);
  }
  return {
    binary,
    env: { PATH: SYSTEM_PATH, CONTAINERS_CONF: conf, HOME: "/root" },
    ...(containersConf ? { customConf: true } : {}),
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * One podman CLI call. Only the client is killed at the timeout: podman hands containers to conmon,
 * which must outlive the call that started them.
 */
export async function runPodman(cli: PodmanCli, args: string[], timeoutMs = 120_000): Promise<CliResult> {
  const r = await runHostCommand([cli.binary, ...args], {
    env: cli.env,
    // Never the caller's directory: the OCI runtime leaves files (an `oom` marker) where it runs.
    cwd: tmpdir(),
    newSession: false,
    timeoutMs,
    maxOutputBytes: 16 * 1024 * 1024,
    killTree: async (child) => {
      if (child.pid !== undefined) signalQuietly(child.pid);
    },
  });
  const why = r.spawnError ?? (r.timedOut ? `podman ${args[0]} took longer than ${timeoutMs} ms` : "");
  return { code: r.exitCode ?? 1, stdout: r.stdout, stderr: r.stderr || why };
}
