/**
 * What every sandbox does the same way, whichever provider runs it:
 * - lifecycle: running → destroying → destroyed; destroy() is idempotent, and a sandbox being
 *   destroyed refuses new commands and file access as `died`;
 * - commands: refused when empty, the env and cwd composed, output capped, timeouts and kill()
 *   killing the whole tree, the one ExecResult, and whether a failed command means the sandbox
 *   died under it (`died`) or the exec machinery failed (`exec-failed`);
 * - files: every path checked against the writable roots, write, read, list, copy in and out over
 *   the provider's transport, failures as `exec-failed`.
 * A provider supplies how a command starts, whether the sandbox is still there, how it is stopped
 * and how its files travel.
 */
import type { Readable } from "node:stream";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { execResultOf, superviseCommand, type CommandRun, type OutputSink, type RunningCommand, type SupervisedCommand } from "./command.js";
import { listInside } from "./files/host-files.js";
import { SnapshotWriter } from "./files/snapshot-writer.js";
import { locateSandboxPath, type FileTransport, type SandboxPath } from "./files/transport.js";
import { resolveCwd, SANDBOX_HOME, SANDBOX_WORKSPACE } from "./layout.js";
import type {
  CopyLimits,
  CopyReport,
  ExecOptions,
  ExecResult,
  Sandbox,
  SandboxFile,
  SandboxProcess,
  SandboxProviderType,
  SandboxWriteExtras,
} from "./provider.js";
import { failedProcess, messageOf, SandboxError } from "./sandbox-error.js";

export type SandboxState = "running" | "destroying" | "destroyed";

/** One command as the provider is asked to start it: env and cwd already composed. */
export interface CommandRequest {
  argv: string[];
  /** Absolute in-sandbox working directory. */
  cwd: string;
  /** The command's whole environment. */
  env: Record<string, string>;
  stdin?: string | Uint8Array | Readable;
}

function tail(text: string): string {
  return text.trim().slice(-300);
}

export abstract class BaseSandbox implements Sandbox {
  abstract readonly provider: SandboxProviderType;
  readonly workspacePath = SANDBOX_WORKSPACE;
  readonly homePath = SANDBOX_HOME;
  /** How files travel in and out of this sandbox. */
  protected abstract readonly files: FileTransport;
  /** Whether a non-zero exit may mean the sandbox died under the command (`probe()` then decides). */
  protected exitMayMeanDeath = true;
  /** What to check when the exec machinery fails. */
  protected execHint = "";
  private current: SandboxState = "running";
  private destroying: Promise<void> | null = null;
  private readonly running = new Set<SupervisedCommand>();
  /** Commands running when stopProcesses began: they end by the runner's kill, whenever their end is seen. */
  private readonly stopping = new WeakSet<SupervisedCommand>();
  private readonly onDestroyed: (() => void)[] = [];

  protected constructor(
    readonly id: string,
    /** The environment every command starts from. */
    protected readonly env: Record<string, string>,
    readonly proxyUrl?: string,
  ) {}

  /** Starts one command; may throw when the command cannot be expressed (an invalid env name). */
  protected abstract startCommand(request: CommandRequest, sink: OutputSink): RunningCommand;
  /** Whether the sandbox itself is still there. */
  protected abstract probe(): Promise<boolean>;
  /** Kills every process of the sandbox. */
  protected abstract stop(): Promise<void>;
  /** Kills every process the sandbox's commands started, keeping the sandbox and its files. */
  protected abstract killProcesses(): Promise<void>;
  /** Removes what is left of the sandbox once no command runs any more. */
  protected async removeState(): Promise<void> {}

  /** Whether a command of this sandbox is still running (started and not yet ended). */
  protected get busy(): boolean {
    return this.running.size > 0;
  }

  get lifecycle(): SandboxState {
    return this.current;
  }

  whenDestroyed(listener: () => void): void {
    this.onDestroyed.push(listener);
  }

  async alive(): Promise<boolean> {
    return this.current === "running" && (await this.probe());
  }

  private died(detail: string): SandboxError {
    return new SandboxError("died", this.id, `the sandbox is no longer running (${detail})`, "retry the rollout in a new sandbox");
  }

  spawn(argv: string[], options: ExecOptions = {}): SandboxProcess {
    if (this.current !== "running") return failedProcess(new SandboxError("died", this.id, "the sandbox was destroyed"));
    if (argv.length === 0) return failedProcess(new SandboxError("exec-failed", this.id, "empty command"));
    const request: CommandRequest = { argv, cwd: resolveCwd(options.cwd), env: { ...this.env, ...(options.env ?? {}) }, stdin: options.stdin };
    let command: SupervisedCommand;
    try {
      command = superviseCommand((sink) => this.startCommand(request, sink), options);
    } catch (error) {
      return failedProcess(new SandboxError("exec-failed", this.id, messageOf(error), this.execHint, { cause: error }));
    }
    this.running.add(command);
    const result = command.done.then((run) => {
      this.running.delete(command);
      return this.resultOf(command, run);
    });
    result.catch(() => undefined);
    return {
      wait: () => result,
      kill: async () => {
        await command.kill();
        await result.catch(() => undefined);
      },
    };
  }

  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    return this.spawn(argv, options).wait();
  }

  private async resultOf(command: SupervisedCommand, run: CommandRun): Promise<ExecResult> {
    const endedByRunner = (): boolean => run.killed || this.current !== "running" || this.stopping.has(command);
    let killed = endedByRunner();
    if (!killed) {
      const failure = "failure" in run.end ? run.end.failure : undefined;
      const detail = [failure, tail(run.output.stderr.text())].filter(Boolean).join(": ");
      const suspect = failure !== undefined || (this.exitMayMeanDeath && "exitCode" in run.end && run.end.exitCode !== 0);
      if (suspect && !(await this.alive())) {
        // The sandbox went while it was probed: destroyed by the runner then, not dead under the command.
        killed = endedByRunner();
        if (!killed) throw this.died(detail || "the command ended with it");
      }
      if (!killed && failure !== undefined) throw new SandboxError("exec-failed", this.id, detail, this.execHint);
    }
    return execResultOf({ ...run, killed });
  }

  private locate(p: string): SandboxPath {
    const at = locateSandboxPath(p);
    if (!at) throw new SandboxError("exec-failed", this.id, `path "${p}" is outside the workspace, HOME and /tmp`, "use a path relative to the workspace");
    return at;
  }

  private async onFiles<T>(what: string, op: () => Promise<T>): Promise<T> {
    if (this.current !== "running") throw new SandboxError("died", this.id, "the sandbox was destroyed");
    try {
      return await op();
    } catch (error) {
      if (error instanceof SandboxError) throw error;
      throw new SandboxError("exec-failed", this.id, `${what}: ${messageOf(error)}`, "", { cause: error });
    }
  }

  async writeFiles(files: SandboxFile[], extras: SandboxWriteExtras = {}): Promise<void> {
    const prepared = files.map((f) => ({
      at: this.locate(f.path),
      content: typeof f.content === "string" ? Buffer.from(f.content, "utf8") : f.content,
      mode: f.mode ?? 0o644,
    }));
    const directories = (extras.directories ?? []).map((d) => ({ at: this.locateEntry(d.path), mode: d.mode ?? 0o755 }));
    const links = (extras.links ?? []).map((l) => {
      if (l.target.length === 0 || l.target.includes("\0")) throw new SandboxError("exec-failed", this.id, `invalid link target for "${l.path}"`);
      return { at: this.locateEntry(l.path), target: l.target };
    });
    const more = directories.length + links.length > 0 ? { directories, links } : undefined;
    await this.onFiles("cannot write files", () => this.files.write(prepared, more));
  }

  /** A path below a root, never the root itself (a directory or link to make). */
  private locateEntry(p: string): SandboxPath {
    const at = this.locate(p);
    if (at.rel === "") throw new SandboxError("exec-failed", this.id, `path "${p}" is a root of the sandbox`, "name a path below the workspace, HOME or /tmp");
    return at;
  }

  async copyIn(hostDir: string, dir: string): Promise<void> {
    const at = this.locate(dir);
    const names = await listInside(hostDir, "");
    const files = await Promise.all(
      names.map(async (rel) => {
        const file = path.join(hostDir, rel);
        return { path: `${at.abs}/${rel}`, content: await readFile(file), mode: (await stat(file)).mode & 0o777 };
      }),
    );
    await this.writeFiles(files);
  }

  async readFile(p: string): Promise<Buffer> {
    const at = this.locate(p);
    return this.onFiles(`cannot read ${p}`, () => this.files.read(at));
  }

  async listFiles(dir = "."): Promise<string[]> {
    const at = this.locate(dir);
    return this.onFiles(`cannot list ${dir}`, () => this.files.list(at));
  }

  async copyOut(dir: string, hostDir: string, limits: CopyLimits = {}): Promise<CopyReport> {
    const at = this.locate(dir);
    const writer = new SnapshotWriter(hostDir, limits);
    await this.onFiles(`cannot copy ${dir} out`, () => this.files.copyOut(at, writer, writer.limits.timeoutMs));
    return writer.result();
  }

  async stopProcesses(): Promise<void> {
    if (this.current !== "running") throw this.died("it was destroyed");
    for (const command of this.running) this.stopping.add(command);
    try {
      await this.killProcesses();
    } catch (error) {
      if (error instanceof SandboxError) throw error;
      throw new SandboxError("exec-failed", this.id, `cannot stop the sandbox's processes: ${messageOf(error)}`, this.execHint, { cause: error });
    }
    // Commands still waited on end with their processes; their ends are collected here.
    await Promise.all([...this.running].map((command) => command.kill()));
  }

  destroy(): Promise<void> {
    if (!this.destroying) this.destroying = this.teardown();
    return this.destroying;
  }

  private async teardown(): Promise<void> {
    this.current = "destroying";
    try {
      await this.stop();
    } finally {
      for (const command of this.running) command.release();
      await Promise.all([...this.running].map((command) => command.done));
      await this.removeState().catch(() => undefined);
      this.current = "destroyed";
      for (const listener of this.onDestroyed) listener();
    }
  }
}
