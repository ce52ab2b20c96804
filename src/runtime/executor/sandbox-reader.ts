/**
 * A rollout's final workspace as its verifier sees it, the same on every provider: a snapshot
 * copied out of the sandbox through the contract (`copyOut`: a host copy for local and podman, tar
 * over exec for kubernetes), read with the verifiers' hardened directory reader; commands (scripts,
 * commandExitsZero) run inside the sandbox, with the task's hidden files copied in for them only,
 * after the harness has exited, under a fresh random directory.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ResolvedTask } from "../../compiler/contract/plan.js";
import type { CopyLimits, CopyReport, ExecResult, Sandbox } from "../sandbox/provider.js";
import { DirectoryReader, verifierEnv } from "../verifiers/directory-reader.js";
import type { Judge } from "../verifiers/judge.js";
import { runVerifier, type VerifierResult } from "../verifiers/verify.js";
import type { ExecRequest, ListResult, ReadResult, StatResult, WorkspaceReader } from "../verifiers/workspace.js";

export class SandboxReader implements WorkspaceReader {
  readonly description: string;
  private readonly files: WorkspaceReader;

  /** Files from `snapshotDir` (a copy of the sandbox's workspace), commands in the sandbox. */
  constructor(
    private readonly sandbox: Sandbox,
    snapshotDir: string,
  ) {
    this.description = `sandbox ${sandbox.id}`;
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

  async exec(req: ExecRequest): Promise<ExecResult> {
    const started = Date.now();
    const extra: Record<string, string> = { ...(req.env ?? {}) };
    if (req.hiddenDir !== undefined) {
      const dir = `${this.sandbox.homePath}/.reins-verify-${randomBytes(12).toString("hex")}`;
      await this.sandbox.copyIn(req.hiddenDir, dir);
      extra.REINS_HIDDEN = dir;
    }
    try {
      return await this.sandbox.exec(req.argv, {
        cwd: this.sandbox.workspacePath,
        env: verifierEnv(this.sandbox.workspacePath, this.sandbox.homePath, extra),
        timeoutMs: req.timeoutMs,
        maxOutputBytes: req.maxOutputBytes ?? 1024 * 1024,
      });
    } catch (err) {
      const message = (err as Error).message;
      return { exitCode: null, signal: null, stdout: "", stderr: "", stdoutTruncated: false, stderrTruncated: false, timedOut: false, durationMs: Date.now() - started, spawnError: message };
    }
  }
}

export interface WorkspaceSnapshot {
  reader: SandboxReader;
  report: CopyReport;
  remove(): Promise<void>;
}

/** Copies the sandbox's workspace into a private host directory. Sandbox failures throw SandboxError. */
export async function snapshotWorkspace(sandbox: Sandbox, limits?: CopyLimits): Promise<WorkspaceSnapshot> {
  const parent = await mkdtemp(join(tmpdir(), "reins-snapshot-"));
  const remove = (): Promise<void> => rm(parent, { recursive: true, force: true });
  try {
    const dir = join(parent, "workspace");
    await mkdir(dir);
    const report = await sandbox.copyOut(sandbox.workspacePath, dir, limits);
    return { reader: new SandboxReader(sandbox, dir), report, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

/**
 * Verifies a rollout's final workspace: snapshot, verifier, snapshot removed. A workspace too large
 * to copy is the agent's doing: a verifier error, never a reward and never retried.
 */
export async function verifySandbox(sandbox: Sandbox, task: ResolvedTask, opts: { rollout: string; judge?: Judge; limits?: CopyLimits }): Promise<VerifierResult> {
  const started = Date.now();
  const snapshot = await snapshotWorkspace(sandbox, opts.limits);
  try {
    const { incomplete } = snapshot.report;
    if (incomplete !== undefined) {
      return {
        status: "error",
        reward: null,
        passed: false,
        passThreshold: task.verifier.passThreshold,
        parts: {},
        weights: {},
        error: { part: "verifier", code: "WorkspaceTooLarge", message: `the final workspace could not be copied for verification: ${incomplete}` },
        durationMs: Date.now() - started,
      };
    }
    return await runVerifier(task.verifier, {
      reader: snapshot.reader,
      instruction: task.instruction,
      hiddenFiles: task.hiddenFiles,
      rollout: opts.rollout,
      ...(opts.judge ? { judge: opts.judge } : {}),
    });
  } finally {
    await snapshot.remove();
  }
}
