/**
 * Pure builders for the local provider: the bubblewrap command that holds a sandbox's namespaces
 * (the "keeper"), and the command line that runs one command inside them.
 *
 * Layout inside the sandbox:
 *   /usr /etc /opt /var /sys ...  the host's system directories, read-only (minus `hide`)
 *   /workspace                    the rollout's workspace (writable)
 *   /home/sandbox                 private HOME (writable)
 *   /tmp                          private /tmp (writable)
 *     (each a tmpfs of its own capped at `capBytes` when set, made by bwrap in the sandbox's mount
 *     namespace: it goes with the sandbox, nothing of it is mounted on the host; otherwise the
 *     host directories `*Host`, bound)
 *   /run                          empty tmpfs; /run/reins/proxy.sock is the proxy's Unix socket
 *   /proc /dev                    fresh, for the sandbox's own pid namespace
 * The host's /root, /home, /mnt, /media, /srv, /tmp, /run and every other non-system top-level
 * directory are absent. The root itself is remounted read-only once everything is in place.
 */
import { PROXY_SOCKET_IN_SANDBOX } from "../layout.js";
import { rlimitsOf, type Confinement } from "./confine.js";

export interface HostEntry {
  /** Top-level name under "/", e.g. "usr". */
  name: string;
  kind: "dir" | "symlink" | "file";
  /** Symlink target as written, e.g. "usr/bin". */
  target?: string;
}

export interface HiddenPath {
  path: string;
  kind: "dir" | "file";
}

export interface KeeperLayout {
  /** Top-level host entries to show read-only (already filtered to system directories). */
  hostEntries: HostEntry[];
  hide: HiddenPath[];
  /** An empty file on the host, bound over hidden files. */
  emptyFile: string;
  passwdFile?: string;
  groupFile?: string;
  workspaceHost: string;
  homeHost: string;
  tmpHost: string;
  /** Size of each writable root's own tmpfs, in bytes; unset: the host directories are bound. */
  capBytes?: number;
  workspacePath: string;
  homePath: string;
  mounts: { hostPath: string; sandboxPath: string; readOnly: boolean }[];
  /** Host Unix socket bound at /run/reins/proxy.sock. */
  proxySocketHost?: string;
  /** Host node binary bound at /run/reins/node for the node forwarder. */
  forwarderNodeHost?: string;
  hostname: string;
  network: "proxy-only" | "none";
}

export const SYSTEM_DIRS = ["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "var", "sys"];

export const DEFAULT_HIDDEN = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/ssh",
  "/etc/ssl/private",
  "/var/lib/containers",
  "/var/lib/docker",
  "/var/tmp",
];

export const FORWARDER_NODE_IN_SANDBOX = "/run/reins/node";

/** bwrap arguments (without the trailing command) for the keeper. */
export function buildKeeperArgs(layout: KeeperLayout): string[] {
  const a: string[] = [];
  for (const entry of layout.hostEntries) {
    const dest = `/${entry.name}`;
    if (entry.kind === "symlink") a.push("--symlink", entry.target ?? "", dest);
    else a.push("--ro-bind", dest, dest);
  }
  for (const hidden of layout.hide) {
    if (hidden.kind === "dir") a.push("--tmpfs", hidden.path);
    else a.push("--ro-bind", layout.emptyFile, hidden.path);
  }
  if (layout.passwdFile) a.push("--ro-bind", layout.passwdFile, "/etc/passwd");
  if (layout.groupFile) a.push("--ro-bind", layout.groupFile, "/etc/group");
  a.push("--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/run");
  // Directories bwrap would create on the way to a mount point are 0700; the sandbox user must
  // traverse them. Those for extra mounts come after /tmp, HOME and the workspace are bound.
  const own = [layout.homePath, layout.workspacePath];
  for (const dir of ancestorsToCreate(own, layout.hostEntries)) a.push("--perms", "0755", "--dir", dir);
  if (layout.capBytes !== undefined) {
    const size = String(layout.capBytes);
    a.push("--perms", "1777", "--size", size, "--tmpfs", "/tmp");
    a.push("--perms", "0755", "--size", size, "--tmpfs", layout.homePath);
    a.push("--perms", "0755", "--size", size, "--tmpfs", layout.workspacePath);
  } else {
    a.push("--bind", layout.tmpHost, "/tmp");
    a.push("--bind", layout.homeHost, layout.homePath);
    a.push("--bind", layout.workspaceHost, layout.workspacePath);
  }
  const existing = ["/tmp", "/run", "/dev", "/proc", ...own, ...ancestorsToCreate(own, layout.hostEntries)];
  const extra = ancestorsToCreate(
    layout.mounts.map((m) => m.sandboxPath),
    layout.hostEntries,
    existing,
  );
  for (const dir of extra) a.push("--perms", "0755", "--dir", dir);
  for (const m of layout.mounts) a.push(m.readOnly ? "--ro-bind" : "--bind", m.hostPath, m.sandboxPath);
  if (layout.proxySocketHost) a.push("--ro-bind", layout.proxySocketHost, PROXY_SOCKET_IN_SANDBOX);
  if (layout.forwarderNodeHost) a.push("--ro-bind", layout.forwarderNodeHost, FORWARDER_NODE_IN_SANDBOX);
  a.push("--remount-ro", "/");
  a.push("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try");
  a.push("--hostname", layout.hostname);
  a.push("--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv");
  a.push("--setenv", "PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
  a.push("--chdir", layout.workspacePath);
  a.push("--info-fd", "3");
  return a;
}

/**
 * Parent directories of mount points that bwrap would have to create (not inside a shown,
 * read-only host directory), parents first, minus `already`.
 */
export function ancestorsToCreate(targets: string[], hostEntries: HostEntry[], already: string[] = []): string[] {
  const shown = new Set(hostEntries.map((e) => e.name));
  const out: string[] = [];
  for (const target of targets) {
    const parts = target.split("/").filter(Boolean);
    if (parts.length === 0 || shown.has(parts[0])) continue;
    for (let i = 1; i < parts.length; i++) {
      const dir = `/${parts.slice(0, i).join("/")}`;
      if (!out.includes(dir) && !already.includes(dir)) out.push(dir);
    }
  }
  return out;
}

/** Hex form of a port as it appears in /proc/net/tcp. */
export function portHex(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, "0");
}

/**
 * The keeper's own command: start the proxy forwarder (if any), wait until it listens, say
 * "ready", then live as long as the runner: its stdin is a pipe from the runner, on which nothing
 * is ever written, so it reads end-of-file when the runner is gone, however it died (even before
 * bwrap could arm its parent-death signal). It then kills its process group (itself, the
 * forwarder and the forwarder's connections); with no child left, the sandbox's pid 1 ends and
 * the kernel kills everything else in the sandbox. A "ready" nobody reads is no reason to die
 * early (SIGPIPE ignored, after the forwarder has started with the default). Runs with the
 * host's /bin/sh.
 */
export function buildKeeperScript(forwarder: string[] | null, port: number): string {
  const lines: string[] = [];
  if (forwarder) {
    lines.push(`${forwarder.map(shellQuote).join(" ")} </dev/null >/dev/null 2>&1 &`);
    lines.push(`while :; do`);
    lines.push(`  while read -r sl la ra st rest; do`);
    lines.push(`    if [ "$la" = "0100007F:${portHex(port)}" ] && [ "$st" = "0A" ]; then break 2; fi`);
    lines.push(`  done </proc/net/tcp`);
    lines.push(`  sleep 0.005`);
    lines.push(`done`);
  }
  lines.push(`trap '' PIPE`);
  lines.push(`echo ready`);
  lines.push(`exec >/dev/null 2>&1`);
  lines.push(`while read -r line; do :; done`);
  lines.push(`kill -9 0`);
  return lines.join("\n");
}

/** socat forwarding the sandbox's 127.0.0.1:port to the bound proxy socket. */
export function socatForwarder(socatPath: string, port: number): string[] {
  return [socatPath, `TCP-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork`, `UNIX-CONNECT:${PROXY_SOCKET_IN_SANDBOX}`];
}

/** The same forwarder as a node one-liner, for hosts without socat. */
export function nodeForwarder(port: number): string[] {
  const source =
    `const n=require("net");n.createServer(c=>{const u=n.connect(${JSON.stringify(PROXY_SOCKET_IN_SANDBOX)});` +
    `c.pipe(u);u.pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy())})` +
    `.listen(${port},"127.0.0.1")`;
  return [FORWARDER_NODE_IN_SANDBOX, "-e", source];
}

/**
 * pid 1 of each command's own pid namespace: runs the command as its child (so the command keeps
 * normal signal semantics), forwards signals, reaps orphans and exits with the command's status.
 * When it dies, the kernel kills everything the command started.
 */
export const EXEC_INIT_SCRIPT = [
  `cd -- "$1" || exit 126`,
  `unset OLDPWD; shift`,
  `exec 3<&0`,
  `"$@" <&3 3<&- &`,
  `c=$!`,
  `exec 3<&-`,
  `for s in TERM INT HUP QUIT USR1 USR2; do trap "kill -$s \\$c 2>/dev/null" $s; done`,
  `while kill -0 "$c" 2>/dev/null; do wait "$c"; done`,
  `wait "$c"`,
].join("\n");

export interface EnterOptions {
  /** Host pid of the keeper's pid 1 (bwrap's child-pid). */
  targetPid: number;
  uid: number;
  gid: number;
  cwd: string;
  argv: string[];
  /** Give the command a pid namespace of its own (default true): its processes end with it. */
  ownPidNamespace?: boolean;
}

/**
 * nsenter joins the keeper's namespaces; unshare gives the command a pid namespace of its own
 * (so killing its init kills its whole tree); setpriv drops to the sandbox user with no
 * capabilities and no_new_privs; the init script changes to the working directory. The
 * environment comes from the spawning process, which passes only the explicit sandbox env.
 */
export function buildEnterArgv(o: EnterOptions): string[] {
  return [
    "/usr/bin/nsenter",
    "-t",
    String(o.targetPid),
    "-m",
    "-n",
    "-i",
    "-u",
    "-p",
    "-r",
    "-w",
    "--",
    ...(o.ownPidNamespace === false ? [] : ["/usr/bin/unshare", "--pid", "--fork", "--kill-child", "--"]),
    "/usr/bin/setpriv",
    `--reuid=${o.uid}`,
    `--regid=${o.gid}`,
    "--clear-groups",
    "--bounding-set=-all",
    "--inh-caps=-all",
    "--no-new-privs",
    "--",
    "/bin/sh",
    "-c",
    EXEC_INIT_SCRIPT,
    "reins-init",
    o.cwd,
    ...o.argv,
  ];
}

/** The helper's flags for a confinement: the groups it joins and the rlimits it sets. */
function confineFlags(confinement: Confinement): string[] {
  return [...confinement.joins.flatMap((join) => ["-j", join]), ...rlimitsOf(confinement).flatMap((r) => ["-l", `${r.name}=${r.value}`])];
}

/**
 * The same as buildEnterArgv behind buildConfineArgv, through the one-process helper (enter.c):
 * the sandbox's groups and rlimits, its namespaces, the command's own pid namespace, its user.
 */
export function buildHelperArgv(helper: string, o: EnterOptions, confinement: Confinement): string[] {
  const argv = [helper, "-t", String(o.targetPid), "-u", String(o.uid), "-g", String(o.gid)];
  if (o.ownPidNamespace !== false) argv.push("-P");
  return [...argv, ...confineFlags(confinement), "-C", o.cwd, "--", ...o.argv];
}

/** The keeper's confinement through the helper (no host mounts to make): groups, rlimits, then `argv` (absolute). */
export function buildHelperConfineArgv(helper: string, confinement: Confinement, argv: string[]): string[] {
  return [helper, ...confineFlags(confinement), "--", ...argv];
}

export function shellQuote(s: string): string {
  if (/^[A-Za-z0-9_/.:,=@%+-]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
