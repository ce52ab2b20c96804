import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { symlink } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import type { LocalSandbox } from "../../src/runtime/sandbox/local/sandbox.js";
import { SandboxError } from "../../src/runtime/sandbox/sandbox-error.js";
import { isProcessAlive, parseProcStat } from "../../src/runtime/sandbox/host/process-tree.js";
import { ownerStamp, pruneStale } from "../../src/runtime/sandbox/local/host.js";
import { hostPidsWith, tempDir, uniqueMarker } from "./helpers.js";

const temps: string[] = [];
const temp = (prefix: string): string => {
  const dir = tempDir(prefix);
  temps.push(dir);
  return dir;
};
const provider = new LocalSandboxProvider({ rootDir: temp("reins-local-test-") });
let box: LocalSandbox;

beforeAll(async () => {
  box = (await provider.create({ id: "basic", runId: "test-local", network: "none", env: { GREETING: "hello" } })) as LocalSandbox;
});

afterAll(async () => {
  await provider.close();
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

describe.each([
  { way: "through the spawner and the enter helper", native: true },
  { way: "through the runner's own spawns and nsenter, unshare, setpriv", native: false },
])("local sandbox commands, $way", ({ native }) => {
  const ways = new LocalSandboxProvider({ rootDir: temp("reins-local-ways-"), native });
  let box: LocalSandbox;
  beforeAll(async () => {
    box = (await ways.create({ id: "commands", runId: "test-local", network: "none", env: { GREETING: "hello" } })) as LocalSandbox;
  });
  afterAll(() => ways.close());

  it("starts its processes without forking the runner, where it can", async () => {
    const marker = uniqueMarker();
    const proc = box.spawn(["sleep", marker]);
    let pids: number[] = [];
    for (let i = 0; i < 100 && pids.length === 0; i++) {
      pids = hostPidsWith(marker).filter((pid) => readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "sleep");
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(pids).toHaveLength(1);
    // The runner's child the command descends from: the spawner, or the command's own first process.
    const parentOf = (pid: number): number => parseProcStat(readFileSync(`/proc/${pid}/stat`, "utf8"))?.ppid ?? 0;
    let below = pids[0];
    while (parentOf(below) !== process.pid && parentOf(below) > 1) below = parentOf(below);
    expect(parentOf(below)).toBe(process.pid);
    expect(readFileSync(`/proc/${below}/comm`, "utf8").startsWith("reins-spawn")).toBe(native);
    await proc.kill();
  });

  it("runs as the sandbox user with no capability, no supplementary group and no_new_privs", async () => {
    const r = await box.exec(["sh", "-c", "id -u; id -g; grep -E '^(Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status"]);
    const [uid, gid, ...status] = r.stdout.trim().split("\n");
    expect(Number(uid)).toBe(box.uid);
    expect(Number(gid)).not.toBe(0);
    const field = (name: string): string => (status.find((l) => l.startsWith(`${name}:`)) ?? "").split(":")[1].trim();
    expect(field("Groups")).toBe("");
    for (const set of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) expect(field(set), set).toMatch(/^0+$/);
    expect(field("NoNewPrivs")).toBe("1");
  });

  it("relays a large stdin to a command that first writes a large output", async () => {
    const input = "y".repeat(300_000);
    const r = await box.exec(["sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x; wc -c"], { stdin: input });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.length).toBe(200_000 + "300000\n".length);
    expect(r.stdout.endsWith("x300000\n")).toBe(true);
  });

  it("gives a command that exits without reading its stdin its own status, while the runner still writes", async () => {
    const input = "y".repeat(4_000_000);
    const results = await Promise.all(Array.from({ length: 12 }, () => box.exec(["sh", "-c", "echo hi; exit 3"], { stdin: input })));
    for (const r of results) expect([r.exitCode, r.stdout, r.stderr]).toEqual([3, "hi\n", ""]);
  });

  it("ends a command that closed its output and still reads its stdin", async () => {
    const r = await box.exec(["sh", "-c", "exec >&- 2>&-; cat >/tmp/in; exit 3"], { stdin: "some input", timeoutMs: 20_000 });
    expect(r.timedOut).toBe(false);
    expect(r.exitCode).toBe(3);
  });

  it("runs a command in the workspace with exactly the explicit environment", async () => {
    const r = await box.exec(["sh", "-c", 'pwd; echo "$GREETING $EXTRA"; env | sort | cut -d= -f1 | tr "\\n" " "'], { env: { EXTRA: "world" } });
    expect(r.exitCode).toBe(0);
    const [pwd, greeting, names] = r.stdout.trim().split("\n");
    expect(pwd).toBe("/workspace");
    expect(greeting).toBe("hello world");
    expect(names.trim().split(" ").sort()).toEqual(["EXTRA", "GREETING", "HOME", "LANG", "PATH", "PWD", "TMPDIR"].sort());
  });

  it("reports non-zero exits and signals as ordinary results", async () => {
    expect((await box.exec(["sh", "-c", "exit 7"])).exitCode).toBe(7);
    const killed = await box.exec(["sh", "-c", "kill -9 $$"]);
    expect(killed.exitCode).toBe(137);
    expect(killed.signal).toBeNull();
    expect((await box.exec(["no-such-command-xyz"])).exitCode).toBe(127);
  });

  it("passes stdin and honours cwd", async () => {
    await box.writeFiles([{ path: "sub/x.txt", content: "in sub" }]);
    const r = await box.exec(["sh", "-c", "cat; cat x.txt"], { stdin: "from stdin;", cwd: "/workspace/sub" });
    expect(r.stdout).toBe("from stdin;in sub");
  });

  it("caps captured output and keeps the tail, while onOutput sees everything", async () => {
    let seen = 0;
    const r = await box.exec(["sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done"], {
      maxOutputBytes: 100,
      onOutput: (_s, chunk) => (seen += chunk.length),
    });
    expect(r.stdoutTruncated).toBe(true);
    expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(100);
    expect(r.stdout.endsWith("line1999\n")).toBe(true);
    expect(seen).toBeGreaterThan(10_000);
  });

  it("kills the whole process tree at a timeout, including setsid'd children ignoring SIGTERM", async () => {
    const marker = uniqueMarker();
    const r = await box.exec(["sh", "-c", `setsid nohup sh -c 'trap "" TERM; exec sleep ${marker}' >/dev/null 2>&1 & sleep ${marker}`], { timeoutMs: 500 });
    expect(r.timedOut).toBe(true);
    expect(r.signal).toBe("SIGKILL");
    expect(r.exitCode).toBeNull();
    expect(hostPidsWith(marker)).toEqual([]);
  });

  it("kill() on a spawned command ends it and everything it started", async () => {
    const marker = uniqueMarker();
    const proc = box.spawn(["sh", "-c", `(trap "" TERM HUP; sleep ${marker}) & sleep ${marker}`]);
    for (let i = 0; i < 100 && hostPidsWith(marker).length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(hostPidsWith(marker).length).toBe(2);
    await proc.kill();
    const result = await proc.wait();
    expect(result.signal).toBe("SIGKILL");
    expect(result.timedOut).toBe(false);
    expect(hostPidsWith(marker)).toEqual([]);
  });

  it("a command's background processes end with the command", async () => {
    const marker = uniqueMarker();
    const r = await box.exec(["sh", "-c", `setsid nohup sleep ${marker} >/dev/null 2>&1 & echo started`]);
    expect(r.stdout).toBe("started\n");
    expect(hostPidsWith(marker)).toEqual([]);
  });
});

describe("local sandbox files", () => {
  it("writes, lists and reads workspace and HOME files owned by the sandbox user", async () => {
    await box.writeFiles([
      { path: "a/b/c.txt", content: "abc" },
      { path: "bin.dat", content: new Uint8Array([0, 255, 1]), mode: 0o600 },
      { path: "/home/sandbox/.config/tool.json", content: "{}" },
    ]);
    expect(await box.listFiles()).toEqual(expect.arrayContaining(["a/b/c.txt", "bin.dat"]));
    expect(await box.listFiles("/home/sandbox")).toEqual([".config/tool.json"]);
    expect([...(await box.readFile("bin.dat"))]).toEqual([0, 255, 1]);
    const r = await box.exec(["sh", "-c", "cat a/b/c.txt; echo; stat -c '%u %a' bin.dat; cat $HOME/.config/tool.json; echo more >> a/b/c.txt"]);
    expect(r.stdout).toBe(`abc\n${box.uid} 600\n{}`);
    expect((await box.readFile("/workspace/a/b/c.txt")).toString()).toBe("abcmore\n");
  });

  it("refuses paths outside the workspace, HOME and /tmp", async () => {
    await expect(box.writeFiles([{ path: "../escape.txt", content: "x" }])).rejects.toBeInstanceOf(SandboxError);
    await expect(box.writeFiles([{ path: "/etc/evil", content: "x" }])).rejects.toBeInstanceOf(SandboxError);
    await expect(box.readFile("/etc/passwd")).rejects.toBeInstanceOf(SandboxError);
  });

  it("never follows a symlink the sandbox planted to a host file", async () => {
    const secretDir = temp("reins-secret-");
    const secret = path.join(secretDir, "secret.txt");
    await import("node:fs/promises").then((fs) => fs.writeFile(secret, "host secret"));
    await box.exec(["ln", "-s", secret, "link.txt"]);
    await box.exec(["ln", "-s", "/etc", "etc-link"]);
    await expect(box.readFile("link.txt")).rejects.toThrow(/outside the sandbox/);
    await expect(box.writeFiles([{ path: "etc-link/evil", content: "x" }])).rejects.toBeInstanceOf(SandboxError);
    expect(existsSync("/etc/evil")).toBe(false);
    await symlink(secret, path.join(box.workspaceHostPath, "host-made-link")).catch(() => undefined);
    await expect(box.writeFiles([{ path: "host-made-link", content: "overwrite" }])).rejects.toBeInstanceOf(SandboxError);
    expect(await import("node:fs/promises").then((fs) => fs.readFile(secret, "utf8"))).toBe("host secret");
  });
});

describe("local sandbox links and directories", () => {
  it("writes empty directories and symlinks with their text as given, owned by the sandbox user", async () => {
    await box.writeFiles([{ path: "pkg/bin/tool.sh", content: "#!/bin/sh\necho tool\n", mode: 0o755 }], {
      directories: [{ path: "out/empty" }],
      links: [
        { path: "node_modules/.bin/tool", target: "../../pkg/bin/tool.sh" },
        { path: "abs", target: "/etc/hostname" },
        { path: "dangling", target: "nowhere/x" },
      ],
    });
    const r = await box.exec([
      "sh",
      "-c",
      "node_modules/.bin/tool; readlink abs dangling; ls -A out/empty | wc -l; stat -c %u node_modules/.bin/tool out/empty",
    ]);
    expect(r.stdout).toBe(`tool\n/etc/hostname\nnowhere/x\n0\n${box.uid}\n${box.uid}\n`);
  });

  it("never makes a link through a link the sandbox planted, nor over an existing name", async () => {
    const outside = temp("reins-link-target-");
    await box.exec(["ln", "-s", outside, "planted-dir"]);
    await box.exec(["sh", "-c", "echo mine > taken.txt"]);
    await expect(box.writeFiles([], { links: [{ path: "planted-dir/evil", target: "/etc/passwd" }] })).rejects.toBeInstanceOf(SandboxError);
    await expect(box.writeFiles([], { directories: [{ path: "planted-dir/sub" }] })).rejects.toBeInstanceOf(SandboxError);
    await expect(box.writeFiles([], { links: [{ path: "taken.txt", target: "/etc/passwd" }] })).rejects.toBeInstanceOf(SandboxError);
    await expect(box.writeFiles([], { links: [{ path: ".", target: "/" }] })).rejects.toBeInstanceOf(SandboxError);
    expect(existsSync(path.join(outside, "evil"))).toBe(false);
    expect(existsSync(path.join(outside, "sub"))).toBe(false);
    expect((await box.readFile("taken.txt")).toString()).toBe("mine\n");
  });
});

describe("local sandbox mounts", () => {
  it("binds extra host directories read-only by default, reachable by the sandbox user", async () => {
    const cache = temp("reins-cache-");
    writeFileSync(path.join(cache, "tool.js"), "console.log('from cache')");
    const shared = temp("reins-shared-");
    // The sandbox user (a uid of its own) needs the host's permissions to read them, as any user would.
    chmodSync(cache, 0o755);
    chmodSync(shared, 0o1777);
    const withMounts = await provider.create({
      id: "mounts",
      runId: "test-local",
      network: "none",
      mounts: [
        { hostPath: cache, sandboxPath: cache },
        { hostPath: cache, sandboxPath: "/tmp/cache/tools" },
        { hostPath: shared, sandboxPath: "/srv2/out", readOnly: false },
      ],
    });
    const r = await withMounts.exec([
      "sh",
      "-c",
      `node ${cache}/tool.js; cat /tmp/cache/tools/tool.js >/dev/null && echo tmp-ok; echo x > ${cache}/new 2>/dev/null || echo ro; echo y > /srv2/out/w && echo rw`,
    ]);
    expect(r.stdout).toBe("from cache\ntmp-ok\nro\nrw\n");
    expect(existsSync(path.join(shared, "w"))).toBe(true);
    await withMounts.destroy();
  });
});

describe("local sandbox lifecycle", () => {
  it("reports a sandbox killed from outside as died, not as a command failure", async () => {
    const victim = (await provider.create({ id: "victim", runId: "test-local", network: "none" })) as LocalSandbox;
    const proc = victim.spawn(["sleep", "30"]);
    await new Promise((r) => setTimeout(r, 100));
    process.kill(victim.hostPid, "SIGKILL");
    await expect(proc.wait()).rejects.toMatchObject({ kind: "died" });
    expect(await victim.alive()).toBe(false);
    await expect(victim.exec(["true"])).rejects.toMatchObject({ kind: "died" });
    await victim.destroy();
  });

  it("stopProcesses kills every process of the sandbox, daemons included, and keeps the sandbox and its files", async () => {
    // Commands sharing the sandbox's pid namespace, as in a container: their daemons outlive them.
    const shared = new LocalSandboxProvider({ rootDir: temp("reins-local-stop-"), isolateCommands: false });
    try {
      const box2 = (await shared.create({ id: "stop", runId: "test-local", network: "none" })) as LocalSandbox;
      const marker = uniqueMarker();
      const r = await box2.exec([
        "sh",
        "-c",
        `echo kept > kept.txt; setsid nohup sh -c 'trap "" TERM HUP INT; sleep ${marker}' >/dev/null 2>&1 & (sleep ${marker} >/dev/null 2>&1 &) ; exit 0`,
      ]);
      expect(r.exitCode).toBe(0);
      for (let i = 0; i < 100 && hostPidsWith(marker).length < 2; i++) await new Promise((res) => setTimeout(res, 20));
      expect(hostPidsWith(marker).length).toBe(2);
      const running = box2.spawn(["sleep", marker]);
      await box2.stopProcesses();
      expect((await running.wait()).exitCode).not.toBe(0);
      for (let i = 0; i < 50 && hostPidsWith(marker).length > 0; i++) await new Promise((res) => setTimeout(res, 20));
      expect(hostPidsWith(marker)).toEqual([]);
      expect(await box2.alive()).toBe(true);
      expect((await box2.readFile("kept.txt")).toString()).toBe("kept\n");
      expect((await box2.exec(["cat", "kept.txt"])).stdout).toBe("kept\n");
      await box2.destroy();
      await expect(box2.stopProcesses()).rejects.toMatchObject({ kind: "died" });
    } finally {
      await shared.close();
    }
  });

  it("a verifier's sandbox runs its commands under another uid than agents' sandboxes", async () => {
    const verifier = (await provider.create({ id: "verifier", runId: "test-local", network: "none", role: "verifier" })) as LocalSandbox;
    try {
      await verifier.writeFiles([{ path: "f.txt", content: "x" }]);
      const agentUid = (await box.exec(["id", "-u"])).stdout.trim();
      const r = await verifier.exec(["sh", "-c", "id -u; stat -c %u f.txt; echo y >> f.txt && echo writable"]);
      const [uid, owner, writable] = r.stdout.trim().split("\n");
      expect(uid).not.toBe(agentUid);
      expect(uid).not.toBe("0");
      expect(owner).toBe(uid);
      expect(writable).toBe("writable");
    } finally {
      await verifier.destroy();
    }
  });

  it("prepares the next sandbox's uid, state and groups in advance, and close() removes them", async () => {
    const rootDir = temp("reins-local-spares-");
    const spares = new LocalSandboxProvider({ rootDir });
    const first = (await spares.create({ id: "first", runId: "test-local", network: "none" })) as LocalSandbox;
    await first.exec(["true"]);
    const names = (): string[] => readdirSync(rootDir).filter((n) => !n.startsWith("."));
    expect(names()).toHaveLength(2); // the first sandbox's state and the spare
    const second = (await spares.create({ id: "second", runId: "test-local", network: "none" })) as LocalSandbox;
    expect(second.uid).not.toBe(first.uid);
    expect((await second.exec(["sh", "-c", "id -u; id -un"])).stdout).toBe(`${second.uid}\nsandbox\n`);
    await first.destroy();
    await second.destroy();
    await spares.close();
    expect(names()).toEqual([]);
    expect(readdirSync(path.join(rootDir, ".uids"))).toEqual([]);
  });

  it("destroy kills every process, even setsid'd ones ignoring SIGTERM, and removes the state", async () => {
    const doomed = (await provider.create({ id: "doomed", runId: "test-local", network: "none" })) as LocalSandbox;
    const marker = uniqueMarker();
    const proc = doomed.spawn(["sh", "-c", `setsid nohup sh -c 'trap "" TERM HUP INT; sleep ${marker}' >/dev/null 2>&1 & exec sleep ${marker}`]);
    for (let i = 0; i < 100 && hostPidsWith(marker).length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    const pids = hostPidsWith(marker);
    expect(pids.length).toBe(2);
    const workspace = doomed.workspaceHostPath;
    await doomed.destroy();
    await doomed.destroy();
    expect((await proc.wait()).signal).toBe("SIGKILL");
    expect(pids.filter(isProcessAlive)).toEqual([]);
    expect(hostPidsWith(marker)).toEqual([]);
    expect(isProcessAlive(doomed.hostPid)).toBe(false);
    expect(existsSync(workspace)).toBe(false);
    await expect(doomed.exec(["true"])).rejects.toMatchObject({ kind: "died" });
  });

  it("removes state left by a runner that no longer exists, and keeps live state", async () => {
    const stale = path.join(provider.rootDir, "stale-rollout-abc123");
    mkdirSync(path.join(stale, "workspace"), { recursive: true });
    writeFileSync(path.join(stale, "owner"), "999999999 1\n");
    const mine = path.join(provider.rootDir, "mine-abc123");
    mkdirSync(mine, { recursive: true });
    writeFileSync(path.join(mine, "owner"), `${ownerStamp()}\n`);
    expect(await pruneStale(provider.rootDir)).toBe(1);
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(mine)).toBe(true);
    expect(existsSync(box.workspaceHostPath)).toBe(true);
  });

  it("fails creation with a typed error when the proxy socket is missing", async () => {
    await expect(provider.create({ id: "noproxy", runId: "test-local", network: "proxy-only", proxySocketPath: "/nonexistent/p.sock" })).rejects.toMatchObject({
      kind: "create-failed",
    });
  });
});
