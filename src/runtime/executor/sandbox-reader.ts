/**
 * A WorkspaceReader over a sandbox: files through the host path when the provider has one
 * (symlinks checked by DirectoryReader), commands inside the sandbox. Hidden files are copied in
 * only for the verifier command, after the harness has exited, under a fresh random directory.
 */
import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { DirectoryReader, verifierEnv } from "../verifiers/directory-reader.js";
import type { ExecRequest, ExecResult, ListResult, ReadResult, StatResult, WorkspaceReader } from "../verifiers/workspace.js";
import type { Sandbox } from "../sandbox/provider.js";

export class SandboxReader implements WorkspaceReader {
  readonly description: string;
  private readonly files: WorkspaceReader;

  constructor(private readonly sandbox: Sandbox) {
    this.description = `sandbox ${sandbox.id}`;
    if (!sandbox.workspaceHostPath) throw new Error("SandboxReader needs a provider with a host workspace path");
    this.files = new DirectoryReader(sandbox.workspaceHostPath, { exec: false });
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
      const files = await listHostFiles(req.hiddenDir);
      await this.sandbox.writeFiles(await Promise.all(files.map(async (rel) => ({ path: `${dir}/${rel}`, content: await readFile(join(req.hiddenDir!, rel)) }))));
      extra.REINS_HIDDEN = dir;
    }
    try {
      const r = await this.sandbox.exec(req.argv, {
        cwd: this.sandbox.workspacePath,
        env: verifierEnv(this.sandbox.workspacePath, this.sandbox.homePath, extra),
        timeoutMs: req.timeoutMs,
        maxOutputBytes: req.maxOutputBytes ?? 1024 * 1024,
      });
      return {
        exitCode: r.timedOut ? null : r.exitCode,
        signal: r.signal,
        timedOut: r.timedOut,
        stdout: r.stdout,
        stderr: r.stderr,
        outputTruncated: r.stdoutTruncated || r.stderrTruncated,
        durationMs: r.durationMs,
      };
    } catch (err) {
      return { exitCode: null, signal: null, timedOut: false, stdout: "", stderr: "", outputTruncated: false, durationMs: Date.now() - started, spawnError: (err as Error).message };
    }
  }
}

async function listHostFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const full = join(dir, e.name);
      if (e.isDirectory()) await walk(full);
      else if (e.isFile()) out.push(relative(root, full));
    }
  };
  await walk(root);
  return out.sort();
}
