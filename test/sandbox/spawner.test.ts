/**
 * The spawner (spawn.c, spawner.ts): it starts local sandboxes' keepers and commands so the
 * runner never forks itself. It ends with its last holder and with its runner, leaving no socket
 * or directory; no sandbox can reach it; it refuses requests it cannot read.
 */
import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { nativeProgram } from "../../src/runtime/sandbox/local/native.js";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import { FrameReader } from "../../src/runtime/sandbox/local/served-command.js";
import { acquireSpawner, encodeRequest } from "../../src/runtime/sandbox/local/spawner.js";
import { hostPidsWith, tempDir } from "./helpers.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const temps: string[] = [];
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

async function until(check: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return check();
}

/** Sends raw bytes as a request and collects the frames it gets back. */
function ask(socketPath: string, bytes: Buffer): Promise<{ type: number; text: string }[]> {
  return new Promise((resolve) => {
    const frames: { type: number; text: string }[] = [];
    const reader = new FrameReader((type, payload) => frames.push({ type, text: payload.toString() }));
    const socket = net.connect({ path: socketPath, allowHalfOpen: true });
    socket.on("data", (chunk: Buffer) => reader.push(chunk));
    socket.on("close", () => resolve(frames));
    socket.on("error", () => undefined);
    socket.end(bytes);
  });
}

const binary = await nativeProgram("spawn");

describe("the spawner's requests", () => {
  it("are NUL-separated fields after a length, and a NUL inside a field is refused", () => {
    const request = encodeRequest({ kind: "command", argv: ["/bin/echo", "a b"], env: { X: "1" } });
    expect(request.readUInt32LE(0)).toBe(request.length - 4);
    expect(request.subarray(4).toString()).toBe("command\0\0" + "2\0/bin/echo\0a b\0" + "1\0X=1\0");
    expect(() => encodeRequest({ kind: "command", argv: ["/bin/echo", "a\0b"], env: {} })).toThrow(/NUL/);
  });

  it.skipIf(!binary)("runs a command and relays its pid, output and exit status; refuses what it cannot read", async () => {
    const spawner = (await acquireSpawner(binary!))!;
    try {
      const ok = await ask(spawner.socketPath, encodeRequest({ kind: "command", argv: ["/bin/sh", "-c", "echo out; echo err >&2; exit 4"], env: {} }));
      expect(ok.map((f) => f.type)).toContain(0);
      expect(
        ok
          .filter((f) => f.type === 1)
          .map((f) => f.text)
          .join(""),
      ).toBe("out\n");
      expect(
        ok
          .filter((f) => f.type === 2)
          .map((f) => f.text)
          .join(""),
      ).toBe("err\n");
      expect(ok.at(-1)).toEqual({ type: 3, text: "4" });
      const relative = await ask(spawner.socketPath, encodeRequest({ kind: "command", argv: ["sh", "-c", "true"], env: {} }));
      expect(relative).toEqual([{ type: 4, text: "malformed request" }]);
      const garbage = Buffer.from([8, 0, 0, 0, ...Buffer.from("keeper\0x")]);
      expect(await ask(spawner.socketPath, garbage)).toEqual([{ type: 4, text: "malformed request" }]);
      const body = Buffer.from("other\0\0" + "1\0/bin/true\0" + "0\0");
      const unknown = await ask(spawner.socketPath, Buffer.concat([Buffer.from([body.length, 0, 0, 0]), body]));
      expect(unknown).toEqual([{ type: 4, text: "unknown request" }]);
    } finally {
      spawner.release();
    }
  });
});

describe.skipIf(!binary)("the spawner's life", () => {
  it("ends with its last holder and removes its socket and directory", async () => {
    const first = (await acquireSpawner(binary!))!;
    const second = (await acquireSpawner(binary!))!;
    expect(second).toBe(first);
    const dir = path.dirname(first.socketPath);
    expect(hostPidsWith(first.socketPath)).toHaveLength(1);
    first.release();
    expect(first.alive).toBe(true);
    second.release();
    expect(await until(() => hostPidsWith(first.socketPath).length === 0 && !existsSync(dir))).toBe(true);
  });

  it("ends with its runner, however the runner dies, and removes its socket and directory", async () => {
    const script = `
      import { nativeProgram } from "./src/runtime/sandbox/local/native.ts";
      import { acquireSpawner } from "./src/runtime/sandbox/local/spawner.ts";
      const spawner = await acquireSpawner(await nativeProgram("spawn"));
      console.log(spawner.socketPath);
      setTimeout(() => process.kill(process.pid, "SIGKILL"), 50);`;
    const runner = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    runner.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const signal = await new Promise((res) => runner.once("exit", (_code, sig) => res(sig)));
    expect(signal).toBe("SIGKILL");
    const socketPath = out.trim();
    expect(socketPath).toMatch(/reins-spawn-/);
    expect(await until(() => hostPidsWith(socketPath).length === 0 && !existsSync(path.dirname(socketPath)))).toBe(true);
  }, 30_000);

  it("cannot be reached from a sandbox: its socket lies in the host's temporary directory, which no sandbox sees", async () => {
    const dir = tempDir("reins-spawner-reach-");
    temps.push(dir);
    const provider = new LocalSandboxProvider({ rootDir: dir });
    try {
      const box = await provider.create({ id: "reach", runId: "r", network: "none" });
      const spawner = (await acquireSpawner(binary!))!;
      try {
        const r = await box.exec(["sh", "-c", `test -e ${JSON.stringify(spawner.socketPath)} && echo REACHED; ls -A /tmp | wc -l`]);
        expect(r.stdout).toBe("0\n");
      } finally {
        spawner.release();
      }
    } finally {
      await provider.close();
    }
  });
});
