/**
 * vitest globalSetup: the suite leaves nothing behind. Every test process (and everything they
 * start) gets a private TMPDIR and a marker in its environment. When the suite ends, a process
 * still alive with the marker (a trainer worker that outlived its `reins run`, a stray server) or
 * anything left in the private TMPDIR (a `reins-*` directory a test or the runtime did not remove)
 * fails the run, and is then removed, so a failed run is clean too.
 *
 * Only `reins-*` entries count (tools keep caches there too, e.g. tsx-<uid>); the sandbox
 * providers' shared roots (reins-sandboxes, reins-podman) may remain with their shared files
 * (.host: passwd, group), but each sandbox's own directory inside must be gone.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

const SHARED_ROOTS = new Set(["reins-sandboxes", "reins-podman"]);
const GRACE_MS = 10_000;

interface Leftover {
  pid: number;
  command: string;
}

/** Live (not zombie) processes other than this one whose environment carries `marker`. */
function markedProcesses(marker: string): Leftover[] {
  const out: Leftover[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(marker)) continue;
      if (/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"))) continue;
      const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
      if (/node_modules\/(vitest|tinypool)\//.test(command)) continue; // vitest's own workers, shutting down
      out.push({ pid, command });
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

function leftoverFiles(root: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(root)) {
    if (!name.startsWith("reins-")) continue;
    if (SHARED_ROOTS.has(name)) out.push(...readdirSync(join(root, name)).filter((n) => !n.startsWith(".")).map((n) => `${name}/${n}`));
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
    let procs = markedProcesses(marker);
    for (const deadline = Date.now() + GRACE_MS; procs.length > 0 && Date.now() < deadline; procs = markedProcesses(marker)) {
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
      ...procs.map((p) => `process ${p.pid} still running: ${p.command}`),
      ...files.map((f) => `left in the temporary directory: ${f}`),
    ];
    if (problems.length > 0) {
      // vitest reports a teardown error but keeps its exit status: set it.
      process.exitCode = 1;
      throw new Error(`The suite left things behind (removed now):\n  ${problems.join("\n  ")}\nEach test removes what it makes (test/temp.ts), and every process dies with its parent.`);
    }
  };
}
