/**
 * Running the podman CLI with the settings this host needs (platform notes): runc instead of crun
 * (hybrid cgroups), lowered ulimits (root lacks CAP_SYS_RESOURCE); catatonit must be installed for
 * `kube play`'s pause image.
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";

export const CONTAINERS_CONF = `# Written by reins for podman on hosts with hybrid cgroups and no CAP_SYS_RESOURCE.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
`;

export interface PodmanCli {
  binary: string;
  env: Record<string, string>;
}

export async function preparePodmanCli(binary: string, stateRoot: string, containersConf?: string): Promise<PodmanCli> {
  let conf = containersConf;
  if (!conf) {
    conf = path.join(stateRoot, "containers.conf");
    await writeFile(conf, CONTAINERS_CONF);
  }
  return {
    binary,
    env: { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", CONTAINERS_CONF: conf, HOME: "/root" },
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runPodman(cli: PodmanCli, args: string[], timeoutMs = 120_000): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      cli.binary,
      args,
      { env: cli.env, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof (error as { code?: unknown }).code === "number" ? ((error as { code: number }).code) : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) || (error && code === 1 ? error.message : "") });
      },
    );
  });
}
