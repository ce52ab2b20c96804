/**
 * Exec backend for the mock API server: each pod is a real local sandbox, so exec commands
 * (the provider's env/cwd wrapper, tar, base64, find) run for real.
 */
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import type { Sandbox } from "../../src/runtime/sandbox/provider.js";
import type { ExecBackend } from "./mock-api-server.js";

export class LocalPodBackend implements ExecBackend {
  private readonly provider: LocalSandboxProvider;
  private readonly pods = new Map<string, Promise<Sandbox>>();
  private readonly gone = new Set<string>();

  constructor(rootDir: string) {
    // Commands share the pod's pid namespace, as processes in a container do.
    this.provider = new LocalSandboxProvider({ rootDir, isolateCommands: false });
  }

  has(pod: string): boolean {
    return !this.gone.has(pod);
  }

  private sandbox(pod: string): Promise<Sandbox> {
    let s = this.pods.get(pod);
    if (!s) {
      s = this.provider.create({ id: pod, runId: "mock-kubelet", network: "none" });
      this.pods.set(pod, s);
    }
    return s;
  }

  async run(pod: string, command: string[], stdin: Buffer | null, onOutput: (channel: 1 | 2, chunk: Buffer) => void): Promise<number> {
    const box = await this.sandbox(pod);
    const result = await box.exec(command, {
      cwd: "/",
      ...(stdin ? { stdin } : {}),
      onOutput: (stream, chunk) => onOutput(stream === "stdout" ? 1 : 2, chunk),
    });
    return result.exitCode ?? 137;
  }

  /** The pod disappears (deleted, evicted): its processes die and later execs get 404. */
  async deleted(pod: string): Promise<void> {
    this.gone.add(pod);
    const s = this.pods.get(pod);
    if (s) await (await s).destroy();
  }

  async close(): Promise<void> {
    await this.provider.close();
  }
}
