/**
 * A rollout's final workspace as its verifier sees it, the same on every provider. Once the
 * harness has exited, every process of its sandbox is killed (`stopProcesses`) and only then is
 * the workspace copied out (`copyOut`: a host copy for local and podman, tar over exec for
 * kubernetes) into a private host snapshot; the agent's sandbox is then destroyed. File checks
 * read the snapshot with the verifiers' hardened directory reader. Commands (scripts,
 * commandExitsZero) run in a fresh sandbox of the same provider, created only for them: no
 * network, no harness mounts, a fresh HOME and /tmp, another uid where the provider can choose
 * it, a copy of the snapshot as its workspace (files, empty directories and symlinks:
 * snapshot-entries.ts), and the task's hidden files copied in for them only. Nothing the agent left behind (processes, HOME, user site-packages) exists there. A
 * verifier sandbox that cannot be made is an infrastructure failure (thrown), never a reward.
 */
import { randomBytes } from "node:crypto";
import { lstat, mkdir, mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ResolvedTask } from "../../compiler/contract/plan.js";
import type { McpCallRecord } from "../records/rollout-result.js";
import type { CopyLimits, CopyReport, ExecResult, Sandbox, SandboxFile } from "../sandbox/provider.js";
import { DirectoryReader, verifierEnv } from "../verifiers/directory-reader.js";
import type { Judge } from "../verifiers/judge.js";
import { runVerifier, type VerifierResult } from "../verifiers/verify.js";
import { readSnapshotEntries } from "./snapshot-entries.js";
import type { ExecRequest, ListResult, ReadResult, StatResult, WorkspaceReader } from "../verifiers/workspace.js";

/** Creates the fresh sandbox verifier commands run in; its failures are infrastructure failures. */
export type VerifierSandboxFactory = () => Promise<Sandbox>;

export class SnapshotReader implements WorkspaceReader {
  readonly description: string;
  private readonly files: WorkspaceReader;
  private sandbox: Promise<Sandbox> | undefined;
  /** Why the verifier sandbox could not be made: an infrastructure failure, thrown after the verifier. */
  createError: unknown;

  /** Files from `snapshotDir` (a copy of the final workspace), commands in a fresh sandbox made on first use. */
  constructor(
    private readonly snapshotDir: string,
    private readonly createSandbox: VerifierSandboxFactory,
    description: string,
  ) {
    this.description = description;
    this.files = new DirectoryReader(snapshotDir, { exec: false });
  }

  readFile(path: string, opts: { maxBytes: number; prefix?: boolean }): Promise<ReadResult> {
    return this.files.readFile(path, opts);
  }

  stat(path: string): Promise<StatResult> {
    return this.files.stat(path);
  }

  list(opts?: { maxEntries?: number }): Promise<ListResult> {
    return this.files.list(opts);
  }

  /** Whether a verifier sandbox was created (for tests and phases). */
  get usedSandbox(): boolean {
    return this.sandbox !== undefined;
  }

  private open(): Promise<Sandbox> {
    this.sandbox ??= (async () => {
      const sandbox = await this.createSandbox().catch((error: unknown) => {
        this.createError ??= error;
        throw error;
      });
      try {
        await copySnapshotIn(this.snapshotDir, sandbox);
      } catch (error) {
        await sandbox.destroy().catch(() => undefined);
        this.createError ??= error;
        throw error;
      }
      return sandbox;
    })();
    return this.sandbox;
  }

  /** Runs a verifier command in the verifier sandbox. A sandbox that cannot be created throws (infrastructure). */
  async exec(req: ExecRequest): Promise<ExecResult> {
    const started = Date.now();
    const sandbox = await this.open();
    const extra: Record<string, string> = { ...(req.env ?? {}) };
    try {
      if (req.hiddenDir !== undefined) {
        const dir = `${sandbox.homePath}/.reins-verify-${randomBytes(12).toString("hex")}`;
        await sandbox.copyIn(req.hiddenDir, dir);
        extra.REINS_HIDDEN = dir;
      }
      return await sandbox.exec(req.argv, {
        cwd: sandbox.workspacePath,
        env: verifierEnv(sandbox.workspacePath, sandbox.homePath, extra),
        timeoutMs: req.timeoutMs,
        maxOutputBytes: req.maxOutputBytes ?? 1024 * 1024,
      });
    } catch (err) {
      const message = (err as Error).message;
      return {
        exitCode: null,
        signal: null,
        stdout: "",
        stderr: "",
        stdoutTruncated: false,
        stderrTruncated: false,
        timedOut: false,
        durationMs: Date.now() - started,
        spawnError: message,
      };
    }
  }

  /** Destroys the verifier sandbox, if one was made. */
  async close(): Promise<void> {
    const pending = this.sandbox;
    if (!pending) return;
    await pending.then((s) => s.destroy()).catch(() => undefined);
  }
}

/** Bytes of file content held in memory at once while a snapshot is copied into a verifier sandbox. */
const COPY_IN_BATCH_BYTES = 32 * 1024 * 1024;

/** The snapshot's own bound on one file's content (CopyLimits.maxFileBytes): past it a snapshot file holds zeros. */
const MAX_FILE_BYTES = 16 * 1024 * 1024;

async function readPrefix(file: string, size: number): Promise<Buffer> {
  const handle = await open(file, "r");
  try {
    const buf = Buffer.alloc(size);
    let total = 0;
    while (total < size) {
      const { bytesRead } = await handle.read(buf, total, size - total, total);
      if (bytesRead === 0) break;
      total += bytesRead;
    }
    return buf.subarray(0, total);
  } finally {
    await handle.close();
  }
}

/**
 * The snapshot into the sandbox's workspace: its regular files (modes kept), a batch of at most
 * COPY_IN_BATCH_BYTES at a time, so that a large workspace is never held in memory whole (a file
 * past the snapshot's 16 MiB bound arrives cut to it); then, with the last batch, its empty
 * directories and its symlinks as links, their text as the agent wrote it, except links that
 * would resolve per reader (snapshot-entries.ts).
 */
async function copySnapshotIn(dir: string, sandbox: Sandbox): Promise<void> {
  const entries = await readSnapshotEntries(dir, sandbox.workspacePath);
  let batch: SandboxFile[] = [];
  let bytes = 0;
  for (const rel of entries.files) {
    const file = join(dir, rel);
    const info = await lstat(file);
    if (!info.isFile()) continue;
    const size = Math.min(info.size, MAX_FILE_BYTES);
    if (batch.length > 0 && bytes + size > COPY_IN_BATCH_BYTES) {
      await sandbox.writeFiles(batch);
      batch = [];
      bytes = 0;
    }
    batch.push({ path: `${sandbox.workspacePath}/${rel}`, content: await readPrefix(file, size), mode: info.mode & 0o777 });
    bytes += size;
  }
  const directories = entries.emptyDirectories.map((d) => ({ path: `${sandbox.workspacePath}/${d.rel}`, mode: d.mode }));
  const links = entries.links.map((l) => ({ path: `${sandbox.workspacePath}/${l.rel}`, target: l.target }));
  if (batch.length + directories.length + links.length > 0) await sandbox.writeFiles(batch, { directories, links });
}

export interface WorkspaceSnapshot {
  dir: string;
  report: CopyReport;
  remove(): Promise<void>;
}

/**
 * Kills every process of the sandbox, then copies its workspace into a private host directory.
 * Sandbox failures throw SandboxError.
 */
export async function snapshotWorkspace(sandbox: Sandbox, limits?: CopyLimits): Promise<WorkspaceSnapshot> {
  await sandbox.stopProcesses();
  const parent = await mkdtemp(join(tmpdir(), "reins-snapshot-"));
  const remove = (): Promise<void> => rm(parent, { recursive: true, force: true });
  try {
    const dir = join(parent, "workspace");
    await mkdir(dir);
    const report = await sandbox.copyOut(sandbox.workspacePath, dir, limits);
    return { dir, report, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

/**
 * Verifies a rollout's final workspace snapshot; the verifier sandbox, if one was made, is
 * destroyed afterwards. A workspace too large (or too deep) to copy is the agent's doing, and
 * what the agent made is scored: reward 0 with the reason (never dropped as a failure of reins,
 * which would take failing rollouts out of training and held-out figures), never retried.
 */
export async function verifySnapshot(
  snapshot: WorkspaceSnapshot,
  task: ResolvedTask,
  opts: { rollout: string; judge?: Judge; createSandbox: VerifierSandboxFactory; description?: string; mcpCalls?: readonly McpCallRecord[] },
): Promise<VerifierResult> {
  const started = Date.now();
  const { incomplete } = snapshot.report;
  if (incomplete !== undefined) {
    const reason = `The final workspace is past the copy limits for verification (${incomplete.slice(0, 200)}), so nothing in it was checked.`;
    const result = { type: "workspace", name: "workspace within the copy limits", weight: 1, pass: false, score: 0, reason, code: "WorkspaceTooLarge" };
    return {
      status: "ok",
      reward: 0,
      passed: false,
      passThreshold: task.verifier.passThreshold,
      parts: { checks: { score: 0, passed: 0, total: 1, results: [result] } },
      weights: {},
      durationMs: Date.now() - started,
    };
  }
  const reader = new SnapshotReader(snapshot.dir, opts.createSandbox, opts.description ?? `snapshot of ${opts.rollout}`);
  try {
    const result = await runVerifier(task.verifier, {
      reader,
      instruction: task.instruction,
      hiddenFiles: task.hiddenFiles,
      rollout: opts.rollout,
      ...(opts.judge ? { judge: opts.judge } : {}),
      ...(opts.mcpCalls ? { mcpCalls: opts.mcpCalls } : {}),
    });
    // A verifier that could not get its sandbox has not judged anything: retried, never a reward.
    if (reader.createError !== undefined) throw reader.createError;
    return result;
  } finally {
    await reader.close();
  }
}
