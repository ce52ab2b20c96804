/**
 * An MCP server whose sandbox dies under it: its end is an end like any other (the failure said in
 * its stderr tail), never a rejection nobody waits for — which ended the whole runner at once and
 * left its podman pods behind. A real local sandbox, killed from outside.
 */
import { afterAll, describe, expect, it } from "vitest";
import { ServerProcess } from "../../src/runtime/mcp/server-process.js";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import type { LocalSandbox } from "../../src/runtime/sandbox/local/sandbox.js";
import { tempDir } from "../temp.js";

const provider = new LocalSandboxProvider({ rootDir: tempDir("reins-mcp-process-") });
afterAll(() => provider.close());

describe("an MCP server process", () => {
  it("ends, with the reason in its stderr tail, when its sandbox dies under it", async () => {
    const box = (await provider.create({ id: "mcp-victim", runId: "test-mcp", network: "none" })) as LocalSandbox;
    const server = new ServerProcess(box, ["sh", "-c", "echo starting >&2; sleep 30"], { cwd: ".", env: {}, timeoutMs: 60_000 });
    let closed = 0;
    server.onclose = () => closed++;
    await server.start();
    for (let i = 0; i < 100 && !server.stderrTail(); i++) await new Promise((r) => setTimeout(r, 20));
    process.kill(box.hostPid, "SIGKILL");
    const end = await server.ended;
    expect(end).toMatchObject({ exitCode: null, signal: null });
    expect(server.exit).toBe(end);
    expect(server.stderrTail()).toMatch(/^starting\nthe sandbox is no longer running/);
    expect(closed).toBe(1);
    await server.close();
    await box.destroy();
  });
});
