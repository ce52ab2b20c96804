/**
 * vitest globalSetup: the suite leaves nothing behind. Every test process (and everything they
 * start) gets a private TMPDIR and a marker in its environment. When the suite ends, a process
 * still alive with the marker (a trainer worker that outlived its `reins run`, a stray server), a
 * process that points into the private TMPDIR (its command line or working directory: a sandbox's
 * bwrap, started with an empty environment, names its state there) with everything it started (the
 * sandbox's forwarder), or anything left in the private TMPDIR (a `reins-*` directory a test or the
 * runtime did not remove) fails the run, and is then removed, so a failed run is clean too.
 * Processes of other suites running on the same machine are never counted: they carry another
 * marker and point into another TMPDIR.
 *
 * Only `reins-*` entries count (tools keep caches there too, e.g. tsx-<uid>); the sandbox
 * providers' shared roots (reins-sandboxes, reins-podman) may remain with their shared files
 * (.host: passwd, group), but each sandbox's own directory inside must be gone.
 */
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

const SHARED_ROOTS = new Set(["reins-sandboxes", "reins-podman"]);
const GRACE_MS = 10_000;

interface Leftover {
  pid: number;
  command: string;
}

interface ProcessInfo extends Leftover {
  ppid: number;
  ours: boolean;
}

/** Reads one process: its parent, its command line, whether it is the suite's; null when gone or a zombie. */
function readProcess(pid: number, marker: string, roots: string[]): ProcessInfo | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" || fields[0] === "X") return null;
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    const command = argv.join(" ").trim();
    const under = (p: string): boolean => roots.some((root) => p === root || p.startsWith(`${root}/`) || p.includes(`=${root}/`) || p.includes(`:${root}/`));
    let cwd = "";
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      // not ours to read
    }
    let marked = false;
    try {
      marked = readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(marker);
    } catch {
      // not ours to read
    }
    return { pid, ppid: Number(fields[1]), command, ours: marked || under(cwd) || argv.some(under) };
  } catch {
    return null;
  }
}

/**
 * Live (not zombie) processes other than this one that are the suite's: they carry `marker` in
 * their environment or point into the suite's TMPDIR (`roots`: as given and resolved; command line,
 * working directory), and whatever they started.
 */
export function suiteProcesses(marker: string, roots: string[]): Leftover[] {
  const all = new Map<number, ProcessInfo>();
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const info = readProcess(pid, marker, roots);
    if (info) all.set(pid, info);
  }
  const children = new Map<number, number[]>();
  for (const p of all.values()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const found = new Set<number>();
  const add = (pid: number): void => {
    if (found.has(pid)) return;
    found.add(pid);
    for (const child of children.get(pid) ?? []) add(child);
  };
  for (const p of all.values()) if (p.ours) add(p.pid);
  return [...found]
    .map((pid) => all.get(pid) as ProcessInfo)
    .filter((p) => !/node_modules\/(vitest|tinypool)\//.test(p.command)) // vitest's own workers, shutting down
    .map(({ pid, command }) => ({ pid, command }));
}

function leftoverFiles(root: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(root)) {
    if (!name.startsWith("reins-")) continue;
    if (SHARED_ROOTS.has(name))
      out.push(
        ...readdirSync(join(root, name))
          .filter((n) => !n.startsWith("."))
          .map((n) => `${name}/${n}`),
      );
    else out.push(name);
  }
  return out;
}

export default function setup(): () => Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "reins-suite-"));
  const marker = `REINS_TEST_SUITE=${basename(root)}`;
  process.env.TMPDIR = root;
  process.env.REINS_TEST_SUITE = basename(root);

  return async function teardown() {
    const roots = [...new Set([root, realpathSync(root)])];
    let procs = suiteProcesses(marker, roots);
    for (const deadline = Date.now() + GRACE_MS; procs.length > 0 && Date.now() < deadline; procs = suiteProcesses(marker, roots)) {
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const p of procs) {
      try {
        process.kill(p.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    const files = leftoverFiles(root);
    rmSync(root, { recursive: true, force: true });
    const problems = [
      ...procs.map((p) => `process ${p.pid} still running: ${p.command.length > 300 ? `${p.command.slice(0, 300)}...` : p.command}`),
      ...files.map((f) => `left in the temporary directory: ${f}`),
    ];
    if (problems.length > 0) {
      // vitest reports a teardown error but keeps its exit status: set it.
      process.exitCode = 1;
      throw new Error(
        `The suite left things behind (removed now):\n  ${problems.join("\n  ")}\nEach test removes what it makes (test/temp.ts), and every process dies with its parent.`,
      );
    }
  };
}

/** Alive and not a zombie waiting for its (re)parent to reap it. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return false;
  }
  return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
}
