/**
 * A rollout's agent attacking the machine through its sandbox's resources, for real with the local
 * (bubblewrap) provider: each attack fails for the attacker, the host and the other sandboxes keep
 * working, and destroy() leaves nothing behind.
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { removeTree } from "../../src/runtime/sandbox/files/host-files.js";
import { findExecutable } from "../../src/runtime/sandbox/host/executables.js";
import { PodmanSandboxProvider } from "../../src/runtime/sandbox/podman/provider.js";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import type { LocalSandbox } from "../../src/runtime/sandbox/local/sandbox.js";
import { tempDir } from "../temp.js";

const root = tempDir("reins-limits-test-");
const provider = new LocalSandboxProvider({ rootDir: path.join(root, "state") });
const make = async (id: string, resources: Record<string, unknown> = {}, extra: object = {}): Promise<LocalSandbox> =>
  (await provider.create({ id, runId: "limits", network: "none", resources: { cpu: "1", memoryMiB: 256, ...resources }, ...extra })) as LocalSandbox;

afterAll(async () => {
  await provider.close();
});

/** Host processes running as `uid` (not zombies). */
function processesOf(uid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, "utf8");
      if (/^State:\s+Z/m.test(status)) continue;
      if (new RegExp(`^Uid:\\s+${uid}\\s`, "m").test(status)) out.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return out;
}

function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((p) => p.startsWith(`${dir}/`));
}

describe("sandbox resource limits", () => {
  it("a fork bomb is contained to the sandbox's pids limit; the host and other sandboxes keep working; destroy kills it all", async () => {
    const bomb = await make("fork-bomb", { pids: 64 });
    const other = await make("bystander");
    expect(bomb.uid).not.toBe(other.uid);
    const running = bomb.spawn(["sh", "-c", "f() { f | f & }; f; sleep 60"], { timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 1500));
    expect(processesOf(bomb.uid).length).toBeLessThanOrEqual(64);
    // The host and another sandbox still start processes.
    expect(execFileSync("/bin/echo", ["host ok"]).toString()).toBe("host ok\n");
    expect((await other.exec(["sh", "-c", "sleep 0.1 & wait; echo ok"])).stdout).toBe("ok\n");
    await bomb.destroy();
    await running.wait().catch(() => undefined);
    expect(processesOf(bomb.uid)).toEqual([]);
    await other.destroy();
  });

  it("a process allocating beyond memoryMiB is killed, and smaller allocations work", async () => {
    const box = await make("memory", { memoryMiB: 64 });
    const small = await box.exec(["python3", "-c", "b = bytearray(16 * 1024 * 1024); print('small ok')"]);
    expect(small.stdout).toBe("small ok\n");
    const big = await box.exec(["python3", "-c", "b = bytearray(512 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('allocated')"], {
      timeoutMs: 30_000,
    });
    expect(big.stdout).not.toContain("allocated");
    expect(big.exitCode).not.toBe(0);
    expect(big.timedOut).toBe(false);
    expect(await box.alive()).toBe(true);
    await box.destroy();
  });

  it("a process spinning past cpuSeconds is killed", async () => {
    const box = await make("cpu-time", { cpuSeconds: 1 });
    const r = await box.exec(["python3", "-c", "while True: pass"], { timeoutMs: 30_000 });
    expect(r.timedOut).toBe(false);
    expect([137, 152]).toContain(r.exitCode);
    await box.destroy();
  });

  it("a process opening more than openFiles files gets EMFILE", async () => {
    const box = await make("open-files", { openFiles: 64 });
    const r = await box.exec([
      "python3",
      "-c",
      "import os\nfs = []\ntry:\n  for i in range(1000): fs.append(open('/dev/null'))\nexcept OSError as e: print('stopped', len(fs), e.errno == 24)",
    ]);
    const [word, count, emfile] = r.stdout.trim().split(" ");
    expect(word).toBe("stopped");
    expect(Number(count)).toBeLessThan(64);
    expect(emfile).toBe("True");
    await box.destroy();
  });

  it("filling the disk stops at diskMiB with ENOSPC in the workspace, HOME and /tmp; the runner still reads and writes it", async () => {
    const box = await make("disk", { diskMiB: 16, memoryMiB: 256 });
    for (const dir of ["/workspace", "/home/sandbox", "/tmp"]) {
      const r = await box.exec(["sh", "-c", `dd if=/dev/zero of=${dir}/big bs=1M count=64 2>&1; stat -c %s ${dir}/big; stat -f -c %T ${dir}`]);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain("No space left on device");
      const [size, fsType] = r.stdout.trim().split("\n").slice(-2);
      expect(Number(size)).toBeLessThanOrEqual(16 * 1024 * 1024);
      expect(fsType).toBe("tmpfs");
    }
    await box.exec(["rm", "/workspace/big"]);
    await box.writeFiles([{ path: "note.txt", content: "from the runner" }]);
    expect((await box.exec(["cat", "note.txt"])).stdout).toBe("from the runner");
    const out = tempDir("reins-limits-out-");
    const report = await box.copyOut(".", out);
    expect(report, JSON.stringify(report)).toMatchObject({ files: 1 });
    await box.destroy();
  });

  it("links planted in a capped root never lead the runner out of it (absolute, climbing, looping); a link within it is followed", async () => {
    const box = await make("links", { diskMiB: 16 });
    const r = await box.exec([
      "sh",
      "-c",
      "mkdir -p d && echo inside > d/f && ln -s d/f ok && ln -s /etc/hostname abs && ln -s ../../../../../../etc/hostname up && ln -s loop loop && ln -s /etc etc && echo done",
    ]);
    expect(r.stdout).toBe("done\n");
    expect((await box.readFile("ok")).toString()).toBe("inside\n");
    await expect(box.readFile("abs")).rejects.toThrow(/outside the sandbox/);
    await expect(box.readFile("up")).rejects.toThrow(/outside the sandbox/);
    await expect(box.readFile("loop")).rejects.toThrow(/symbolic links/);
    await expect(box.listFiles("etc")).rejects.toThrow(/outside the sandbox/);
    await expect(box.writeFiles([{ path: "etc/reins-planted", content: "x" }])).rejects.toThrow();
    expect(existsSync("/etc/reins-planted")).toBe(false);
    await box.destroy();
  });

  it("one sandbox cannot read, delete or signal what another sandbox's user owns", async () => {
    const shared = tempDir("reins-limits-shared-");
    chmodSync(shared, 0o1777);
    const mounts = [{ hostPath: shared, sandboxPath: "/srv/shared", readOnly: false }];
    const a = await make("victim", {}, { mounts });
    const b = await make("attacker", {}, { mounts });
    expect(a.uid).not.toBe(b.uid);
    const victim = a.spawn(["sh", "-c", "umask 077; echo secret > /srv/shared/a-secret; exec sleep 300"]);
    await new Promise((r) => setTimeout(r, 300));
    const r = await b.exec(["sh", "-c", "cat /srv/shared/a-secret 2>&1; rm -f /srv/shared/a-secret 2>&1; kill -9 -1 2>&1; echo done"]);
    expect(r.stdout).toMatch(/Permission denied/);
    expect(r.stdout).toMatch(/Operation not permitted/);
    expect(readFileSync(path.join(shared, "a-secret"), "utf8")).toBe("secret\n");
    expect(processesOf(a.uid).length).toBeGreaterThan(0);
    expect(await a.alive()).toBe(true);
    await victim.kill();
    await a.destroy();
    await b.destroy();
  });

  it("destroy removes a 1,500-level deep tree with odd names and locked directories", async () => {
    const box = await make("deep");
    const script = [
      "import os",
      "os.chdir('/workspace')",
      "for i in range(1500):",
      "    os.mkdir('d'); os.chdir('d')",
      "open('deep-file', 'w').write('x')",
      "os.chdir('/workspace')",
      "os.mkdir(b'odd\\nname\\xff\\xfe')",
      "os.mkdir('x' * 255)",
      "open(os.path.join('x' * 255, 'f'), 'w').write('x')",
      "os.mkdir('locked'); os.mkdir('locked/inner'); os.chmod('locked/inner', 0); os.chmod('locked', 0)",
      "print('built')",
    ].join("\n");
    expect((await box.exec(["python3", "-c", script])).stdout).toBe("built\n");
    const stateDir = path.dirname(box.workspaceHostPath);
    await box.destroy();
    expect(existsSync(stateDir)).toBe(false);
    expect(mountsUnder(stateDir)).toEqual([]);
  });

  it("host-side cleanup removes such a tree on a plain directory too", async () => {
    const dir = path.join(tempDir("reins-limits-tree-"), "tree");
    mkdirSync(dir);
    const script = `import os\nos.chdir(${JSON.stringify(dir)})\nfor i in range(1500):\n    os.mkdir('dd'); os.chdir('dd')\nos.mkdir(b'\\n\\xff'); os.chmod(b'\\n\\xff', 0)\n`;
    execFileSync("python3", ["-c", script]);
    expect(await removeTree(dir)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  it("state, mounts and cgroups left by a crashed runner are pruned by the next one; live sandboxes are kept", async () => {
    const rootDir = path.join(root, "crash");
    const live = new LocalSandboxProvider({ rootDir });
    const keep = (await live.create({ id: "live", runId: "limits", network: "none" })) as LocalSandbox;
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "-e",
        `
        import { LocalSandboxProvider } from ${JSON.stringify(path.resolve("src/runtime/sandbox/local/provider.ts"))};
        const p = new LocalSandboxProvider({ rootDir: ${JSON.stringify(rootDir)} });
        const s = await p.create({ id: "crashed", runId: "limits", network: "none" });
        await s.exec(["sh", "-c", "mkdir -p a/b && echo x > a/b/c"]);
        console.log("READY " + s.workspaceHostPath);
        setInterval(() => {}, 1000);
      `,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const workspace = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
        const m = /READY (\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
      child.on("exit", () => reject(new Error(`child exited: ${out}`)));
    });
    const crashedDir = path.dirname(workspace);
    const cgroups = readFileSync(path.join(crashedDir, "cgroups"), "utf8").split("\n").filter(Boolean);
    child.kill("SIGKILL");
    await new Promise((r) => child.once("close", r));
    expect(existsSync(crashedDir)).toBe(true);
    const next = new LocalSandboxProvider({ rootDir });
    const fresh = await next.create({ id: "fresh", runId: "limits", network: "none" });
    expect(existsSync(crashedDir)).toBe(false);
    expect(mountsUnder(crashedDir)).toEqual([]);
    for (const dir of cgroups) expect(existsSync(dir)).toBe(false);
    expect(await keep.alive()).toBe(true);
    expect(existsSync(keep.workspaceHostPath)).toBe(true);
    await fresh.destroy();
    await next.close();
    await live.close();
    expect(readdirSync(rootDir).filter((n) => !n.startsWith("."))).toEqual([]);
  });

  it("an honest rollout works within the default limits", async () => {
    const box = (await provider.create({ id: "honest", runId: "limits", network: "none" })) as LocalSandbox;
    const r = await box.exec([
      "sh",
      "-c",
      "for i in $(seq 20); do (echo $i > f$i) & done; wait; ls | wc -l; python3 -c 'b = bytearray(64 * 1024 * 1024); print(len(b) // 1048576)'",
    ]);
    expect(r.stdout).toBe("20\n64\n");
    await box.destroy();
  });
});

const podman = findExecutable("podman");
describe.skipIf(!podman && process.env.REINS_SKIP_PODMAN === "1")("sandbox resource limits (podman)", () => {
  it("a podman sandbox holds its pids, open files, disk and memory limits", async () => {
    const pods = new PodmanSandboxProvider({ rootDir: path.join(root, "pods") });
    try {
      const box = await pods.create({
        id: "pod-limits",
        runId: "limits",
        network: "none",
        resources: { cpu: "1", memoryMiB: 64, pids: 32, openFiles: 64, diskMiB: 16 },
      });
      const r = await box.exec(["sh", "-c", "ulimit -n; dd if=/dev/zero of=/workspace/big bs=1M count=64 2>&1 | grep -c 'No space left'"], {
        timeoutMs: 60_000,
      });
      expect(r.stdout.trim().split("\n")).toEqual(["64", "1"]);
      const big = await box.exec(["sh", "-c", "head -c 200000000 /dev/zero | tail -c 150000000 >/dev/null; echo $?"], { timeoutMs: 60_000 });
      expect(big.stdout.trim()).not.toBe("0");
      const bomb = await box.exec(["sh", "-c", "i=0; while [ $i -lt 100 ]; do sleep 30 & i=$((i+1)); done; echo started $i"], { timeoutMs: 60_000 });
      expect(bomb.stderr).toMatch(/fork|Resource temporarily unavailable/i);
      await box.destroy();
    } finally {
      await pods.close();
    }
  }, 180_000);
});
