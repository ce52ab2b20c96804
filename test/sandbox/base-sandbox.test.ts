/**
 * How every sandbox judges the end of a command whose exit may mean the sandbox died: it asks
 * whether the sandbox is still there (a probe, a podman or kubectl call that takes a while under
 * load). The runner's own ends — stopProcesses, destroy — must never come out as a death, whatever
 * the order in which the command's end, the probe's answer and the teardown arrive: an MCP server
 * in a pod is ended by stopProcesses right before verification and the pod's destroy, and reading
 * that end as "the sandbox died" failed whole evaluations. The sandbox here is a minimal one whose
 * commands, kill and probe are driven by the test, so that each order is made to happen.
 */
import { describe, expect, it } from "vitest";
import { BaseSandbox, type CommandRequest } from "../../src/runtime/sandbox/base-sandbox.js";
import type { CommandEnd, OutputSink, RunningCommand } from "../../src/runtime/sandbox/command.js";
import type { FileTransport } from "../../src/runtime/sandbox/files/transport.js";

interface Started {
  argv: string[];
  end(e: CommandEnd): void;
}

/** A sandbox whose commands end when the test says, and whose probe answers when the test says. */
class DrivenSandbox extends BaseSandbox {
  readonly provider = "local" as const;
  protected readonly files = {} as FileTransport;
  readonly started: Started[] = [];
  probes = 0;
  private answers: ((alive: boolean) => void)[] = [];
  /** Whether the sandbox is really there: a probe answers it once the test releases the probe. */
  there = true;

  constructor() {
    super("driven", {});
  }

  protected startCommand(request: CommandRequest, _sink: OutputSink): RunningCommand {
    let end!: (e: CommandEnd) => void;
    const done = new Promise<CommandEnd>((resolve) => (end = resolve));
    this.started.push({ argv: request.argv, end });
    return { done, kill: async () => end({ exitCode: 137 }), release: () => end({ exitCode: 137 }) };
  }

  protected probe(): Promise<boolean> {
    this.probes++;
    return new Promise((resolve) => this.answers.push(resolve));
  }

  /** Answers the probes asked so far with whether the sandbox is there now. */
  answerProbes(): void {
    for (const answer of this.answers.splice(0)) answer(this.there);
  }

  /** As a container's kill-all: every command ends with SIGKILL's status, not through the runner's kill(). */
  protected async killProcesses(): Promise<void> {
    for (const s of this.started) s.end({ exitCode: 137 });
  }

  protected async stop(): Promise<void> {
    this.there = false;
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("a command's end, judged by the sandbox", () => {
  it("a command ended by stopProcesses is the runner's kill, even when the sandbox is destroyed before a probe could answer", async () => {
    const box = new DrivenSandbox();
    const server = box.spawn(["mcp-server"]);
    await box.stopProcesses();
    await box.destroy();
    box.answerProbes();
    const r = await server.wait();
    expect(r).toMatchObject({ exitCode: null, signal: "SIGKILL" });
    expect(box.probes).toBe(0);
  });

  it("a command that ended on its own while the runner destroyed the sandbox is not a death either", async () => {
    const box = new DrivenSandbox();
    const command = box.spawn(["make"]);
    box.started[0]!.end({ exitCode: 2 });
    await tick();
    expect(box.probes).toBe(1);
    await box.destroy();
    box.answerProbes();
    expect(await command.wait()).toMatchObject({ exitCode: null, signal: "SIGKILL" });
  });

  it("a sandbox that went under a running command, with nobody stopping it, is still a death", async () => {
    const box = new DrivenSandbox();
    const command = box.spawn(["make"]);
    box.there = false;
    box.started[0]!.end({ exitCode: 137 });
    await tick();
    box.answerProbes();
    await expect(command.wait()).rejects.toMatchObject({ kind: "died" });
  });

  it("a command that fails while the sandbox is there keeps its own exit status", async () => {
    const box = new DrivenSandbox();
    const command = box.spawn(["make"]);
    box.started[0]!.end({ exitCode: 2 });
    await tick();
    box.answerProbes();
    expect(await command.wait()).toMatchObject({ exitCode: 2, signal: null });
  });

  it("a command started after stopProcesses is judged as any other", async () => {
    const box = new DrivenSandbox();
    await box.stopProcesses();
    const later = box.spawn(["verify"]);
    box.there = false;
    box.started[0]!.end({ exitCode: 1 });
    await tick();
    box.answerProbes();
    await expect(later.wait()).rejects.toMatchObject({ kind: "died" });
  });
});
