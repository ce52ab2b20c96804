/** Pure parts of the sandbox providers, checked against real tools where that is the point. */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildTar } from "../../src/runtime/sandbox/files/tar-writer.js";
import { tarEntriesFor } from "../../src/runtime/sandbox/files/exec-transport.js";
import { wrapForContainer, waitForListenerCommand } from "../../src/runtime/sandbox/container-command.js";
import { OutputBuffer } from "../../src/runtime/sandbox/host/output-buffer.js";
import {
  buildEnterArgv,
  buildHelperArgv,
  buildHelperConfineArgv,
  buildKeeperArgs,
  buildKeeperScript,
  portHex,
  type KeeperLayout,
} from "../../src/runtime/sandbox/local/keeper-args.js";
import { resolveHidden, withSandboxUser } from "../../src/runtime/sandbox/local/host.js";
import { parseProcStat } from "../../src/runtime/sandbox/host/process-tree.js";
import { locateSandboxPath } from "../../src/runtime/sandbox/files/transport.js";
import { buildConfineArgv, buildStateFstab } from "../../src/runtime/sandbox/local/confine.js";
import { limitsOf } from "../../src/runtime/sandbox/layout.js";
import { nativeProgram } from "../../src/runtime/sandbox/local/native.js";
import { tempDir } from "./helpers.js";

const helper = await nativeProgram("enter");

const dir = tempDir("reins-builders-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("tar writer", () => {
  it("produces archives GNU tar extracts exactly, long paths and binary content included", async () => {
    const longName = `${"d".repeat(90)}/${"e".repeat(90)}/${"f".repeat(120)}.txt`;
    const entries = tarEntriesFor(
      [
        { abs: "/workspace/a/b.txt", content: Buffer.from("hello"), mode: 0o640 },
        { abs: "/workspace/bin.dat", content: new Uint8Array([0, 1, 2, 255]), mode: 0o755 },
        { abs: `/workspace/${longName}`, content: Buffer.from("long"), mode: 0o644 },
        { abs: "/home/sandbox/.cfg", content: Buffer.from(""), mode: 0o600 },
      ],
      ["/workspace", "/home/sandbox"],
    );
    const archive = await buildTar(entries);
    expect(archive.length % 512).toBe(0);
    const out = path.join(dir, "extract");
    mkdirSync(out);
    execFileSync("tar", ["-x", "-f", "-", "-C", out], { input: archive });
    expect(readFileSync(path.join(out, "workspace/a/b.txt"), "utf8")).toBe("hello");
    expect(statSync(path.join(out, "workspace/a/b.txt")).mode & 0o777).toBe(0o640);
    expect([...readFileSync(path.join(out, "workspace/bin.dat"))]).toEqual([0, 1, 2, 255]);
    expect(statSync(path.join(out, "workspace/bin.dat")).mode & 0o777).toBe(0o755);
    expect(readFileSync(path.join(out, "workspace", longName), "utf8")).toBe("long");
    expect(readFileSync(path.join(out, "home/sandbox/.cfg"), "utf8")).toBe("");
    const listing = execFileSync("tar", ["-t", "-f", "-"], { input: archive }).toString().trim().split("\n");
    expect(listing).toContain("workspace/a/");
  });

  it("writes directories and symlinks (long link texts in a PAX header) that GNU tar extracts as links", async () => {
    const longTarget = `../${"t".repeat(150)}/x`;
    const entries = tarEntriesFor(
      [
        { abs: "/workspace/f.txt", content: Buffer.from("f"), mode: 0o644 },
        { abs: "/workspace/out/empty", directory: true, mode: 0o750 },
        { abs: "/workspace/node_modules/.bin/x", linkTarget: "../x/bin.js" },
        { abs: "/workspace/abs", linkTarget: "/etc/hostname" },
        { abs: "/workspace/long", linkTarget: longTarget },
      ],
      ["/workspace"],
    );
    const out = path.join(dir, "extract-links");
    mkdirSync(out);
    execFileSync("tar", ["-x", "-f", "-", "-C", out], { input: await buildTar(entries) });
    expect(readlinkSync(path.join(out, "workspace/node_modules/.bin/x"))).toBe("../x/bin.js");
    expect(readlinkSync(path.join(out, "workspace/abs"))).toBe("/etc/hostname");
    expect(readlinkSync(path.join(out, "workspace/long"))).toBe(longTarget);
    expect(statSync(path.join(out, "workspace/out/empty")).isDirectory()).toBe(true);
    expect(statSync(path.join(out, "workspace/out/empty")).mode & 0o777).toBe(0o750);
  });

  it("refuses paths outside the roots or with ..", () => {
    expect(() => tarEntriesFor([{ abs: "/etc/passwd", content: Buffer.from(""), mode: 0o644 }], ["/workspace"])).toThrow();
    expect(() => tarEntriesFor([{ abs: "/workspace/../x", content: Buffer.from(""), mode: 0o644 }], ["/workspace"])).toThrow();
  });
});

describe("container command wrapper", () => {
  it("gives exactly the explicit env and working directory (run with the host's sh)", () => {
    const argv = wrapForContainer(["sh", "-c", 'pwd; env | sort; printf "%s|" "$@"', "x", "a b", "c'd"], dir, { B: "2", A: "one two" });
    const out = execFileSync(argv[0], argv.slice(1), { env: { PATH: "/usr/bin:/bin", LEAK: "yes" } }).toString();
    const lines = out.split("\n");
    expect(lines[0]).toBe(dir);
    expect(out).not.toContain("LEAK");
    expect(out).toContain("A=one two\n");
    expect(out.endsWith("a b|c'd|")).toBe(true);
  });

  it("rejects invalid variable names and reports a missing directory as 126", () => {
    expect(() => wrapForContainer(["true"], "/", { "BAD-NAME": "x" })).toThrow();
    const argv = wrapForContainer(["true"], "/nonexistent-dir", {});
    let code = 0;
    try {
      execFileSync(argv[0], argv.slice(1), { stdio: "ignore" });
    } catch (e) {
      code = (e as { status: number }).status;
    }
    expect(code).toBe(126);
  });

  it("waits for a listener by reading /proc/net/tcp", () => {
    expect(waitForListenerCommand(18080)[2]).toContain("0100007F:46A0");
  });
});

describe("local provider builders", () => {
  const layout: KeeperLayout = {
    hostEntries: [
      { name: "usr", kind: "dir" },
      { name: "bin", kind: "symlink", target: "usr/bin" },
      { name: "etc", kind: "dir" },
    ],
    hide: [
      { path: "/etc/ssh", kind: "dir" },
      { path: "/etc/shadow", kind: "file" },
    ],
    emptyFile: "/state/empty",
    passwdFile: "/state/passwd",
    workspaceHost: "/state/ws",
    homeHost: "/state/home",
    tmpHost: "/state/tmp",
    workspacePath: "/workspace",
    homePath: "/home/sandbox",
    mounts: [
      { hostPath: "/cache/npm", sandboxPath: "/opt2/harness/npm", readOnly: true },
      { hostPath: "/cache/tmp", sandboxPath: "/tmp/cache/x", readOnly: true },
    ],
    proxySocketHost: "/sock/r1.sock",
    hostname: "sandbox",
    network: "proxy-only",
  };
  const args = buildKeeperArgs(layout);
  const pairs = (flag: string) => args.flatMap((a, i) => (a === flag ? [[args[i + 1], args[i + 2]]] : []));

  it("shows system dirs read-only, hides secrets, binds the sandbox's own dirs and the socket", () => {
    expect(pairs("--ro-bind")).toEqual(
      expect.arrayContaining([
        ["/usr", "/usr"],
        ["/etc", "/etc"],
        ["/state/empty", "/etc/shadow"],
        ["/state/passwd", "/etc/passwd"],
        ["/cache/npm", "/opt2/harness/npm"],
        ["/sock/r1.sock", "/run/reins/proxy.sock"],
      ]),
    );
    expect(pairs("--symlink")).toEqual([["usr/bin", "/bin"]]);
    expect(pairs("--bind")).toEqual([
      ["/state/tmp", "/tmp"],
      ["/state/home", "/home/sandbox"],
      ["/state/ws", "/workspace"],
    ]);
    expect(args.indexOf("--tmpfs")).toBeLessThan(args.indexOf("/etc/ssh") + 1);
    for (const flag of ["--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session", "--clearenv"]) expect(args).toContain(flag);
    expect(args.slice(args.indexOf("--cap-drop"), args.indexOf("--cap-drop") + 2)).toEqual(["--cap-drop", "ALL"]);
    expect(args.slice(args.indexOf("--remount-ro"), args.indexOf("--remount-ro") + 2)).toEqual(["--remount-ro", "/"]);
  });

  it("makes each writable root a tmpfs of the sandbox's own, capped, instead of binding host dirs, when capped", () => {
    const capped = buildKeeperArgs({ ...layout, capBytes: 16 * 1024 * 1024 });
    expect(capped.flatMap((a, i) => (a === "--bind" ? [capped[i + 2]] : []))).not.toEqual(expect.arrayContaining(["/tmp", "/home/sandbox", "/workspace"]));
    const roots = capped.flatMap((a, i) => (a === "--tmpfs" && capped[i - 2] === "--size" ? [capped.slice(i - 4, i + 2)] : []));
    expect(roots).toEqual([
      ["--perms", "1777", "--size", String(16 * 1024 * 1024), "--tmpfs", "/tmp"],
      ["--perms", "0755", "--size", String(16 * 1024 * 1024), "--tmpfs", "/home/sandbox"],
      ["--perms", "0755", "--size", String(16 * 1024 * 1024), "--tmpfs", "/workspace"],
    ]);
    expect(capped.indexOf("/cache/tmp")).toBeGreaterThan(capped.lastIndexOf("/tmp"));
  });

  it("creates traversable parents for mount points outside the shown dirs", () => {
    const dirs = args.flatMap((a, i) => (a === "--dir" ? [args[i + 1]] : []));
    expect(dirs).toEqual(["/home", "/opt2", "/opt2/harness", "/tmp/cache"]);
    expect(args.indexOf("/opt2")).toBeGreaterThan(args.indexOf("/workspace"));
    expect(args.slice(args.indexOf("/home") - 3, args.indexOf("/home"))).toEqual(["--perms", "0755", "--dir"]);
  });

  it("keeper script waits for the forwarder's listener before saying ready", () => {
    const script = buildKeeperScript(["/usr/bin/socat", "TCP-LISTEN:18080"], 18080);
    expect(script.indexOf("0100007F:46A0")).toBeLessThan(script.indexOf("echo ready"));
    expect(buildKeeperScript(null, 18080)).not.toContain("/proc/net/tcp");
    // Then it lives until its stdin (the runner's pipe) ends, and takes its forwarder with it.
    expect(script.slice(script.indexOf("echo ready"))).toMatch(/\nwhile read -r line; do :; done\nkill -9 0$/);
    expect(portHex(443)).toBe("01BB");
  });

  it("enters the namespaces, gets its own pid namespace and drops every privilege", () => {
    const argv = buildEnterArgv({ targetPid: 42, uid: 1000, gid: 1000, cwd: "/workspace/x", argv: ["echo", "hi"] });
    expect(argv.slice(0, 3)).toEqual(["/usr/bin/nsenter", "-t", "42"]);
    expect(argv).toEqual(expect.arrayContaining(["--pid", "--fork", "--kill-child", "--reuid=1000", "--bounding-set=-all", "--no-new-privs"]));
    expect(argv.slice(-2)).toEqual(["echo", "hi"]);
    expect(argv[argv.indexOf("reins-init") + 1]).toBe("/workspace/x");
  });

  it("adds the sandbox user to passwd, replacing any user with the same id", () => {
    const text = withSandboxUser("root:x:0:0::/root:/bin/sh\nother:x:1000:1000::/home/other:/bin/sh\n", "sandbox:x:1000:1000::/home/sandbox:/bin/sh", 1000, 2);
    expect(text).toBe("root:x:0:0::/root:/bin/sh\nsandbox:x:1000:1000::/home/sandbox:/bin/sh\n");
  });

  it("hides only existing paths under shown directories", () => {
    const hidden = resolveHidden(["/etc/hostname", "/etc/does-not-exist", "/root/x", "/etc"], [{ name: "etc", kind: "dir" }]);
    expect(hidden).toEqual([{ path: "/etc/hostname", kind: "file" }]);
  });
});

describe("small helpers", () => {
  it("output buffer keeps the last bytes", () => {
    const b = new OutputBuffer(5);
    b.push(Buffer.from("abc"));
    b.push(Buffer.from("defg"));
    expect(b.text()).toBe("cdefg");
    expect(b.truncated).toBe(true);
    const unbounded = new OutputBuffer(100);
    unbounded.push(Buffer.from("x"));
    expect(unbounded.truncated).toBe(false);
  });

  it("parses /proc stat lines whose command names contain spaces and parentheses", () => {
    expect(parseProcStat("123 (a (weird) name) S 45 123 123 0 -1 4194560 0")).toEqual({ pid: 123, ppid: 45, pgid: 123, state: "S", flags: 4194560 });
  });

  it("locates in-sandbox paths in the writable roots only", () => {
    expect(locateSandboxPath("a/b")).toEqual({ root: "/workspace", rel: "a/b", abs: "/workspace/a/b" });
    expect(locateSandboxPath(".")).toEqual({ root: "/workspace", rel: "", abs: "/workspace" });
    expect(locateSandboxPath("/home/sandbox/.x/")).toEqual({ root: "/home/sandbox", rel: ".x", abs: "/home/sandbox/.x" });
    expect(locateSandboxPath("/tmp/t")).toEqual({ root: "/tmp", rel: "t", abs: "/tmp/t" });
    expect(locateSandboxPath("../x")).toBeNull();
    expect(locateSandboxPath("/workspace/../etc/passwd")).toBeNull();
    expect(locateSandboxPath("/etc/passwd")).toBeNull();
    expect(locateSandboxPath("/workspace2/x")).toBeNull();
  });
});

writeFileSync(path.join(dir, ".keep"), "");

describe("sandbox limits builders", () => {
  it("fill every limit from its default and read cpu in cores", () => {
    expect(limitsOf({ cpu: "500m", memoryMiB: 64 })).toEqual({ cpus: 0.5, memoryMiB: 64, pids: 1024, diskMiB: 1024, openFiles: 4096, cpuSeconds: 3600 });
    expect(limitsOf().cpus).toBe(1);
  });

  it("confine a process with a real shell: rlimits set, groups joined (the shell moving itself) before the command runs", () => {
    const dir = tempDir("reins-confine-");
    const tasks = path.join(dir, "tasks");
    const limits = { ...limitsOf({ cpu: "1", memoryMiB: 64, openFiles: 100, cpuSeconds: 7 }), pids: 50 };
    const argv = buildConfineArgv({ joins: [tasks], limits, fallback: { memory: true, disk: false }, ownUid: false }, [
      "/bin/sh",
      "-c",
      'cat "$0"; echo " $(ulimit -n) $(ulimit -t) $(ulimit -v)"',
      tasks,
    ]);
    const [joined, nofile, cpu, vmem] = execFileSync(argv[0], argv.slice(1)).toString().trim().split(/\s+/);
    expect([nofile, cpu, vmem]).toEqual(["100", "7", String(64 * 1024)]);
    expect(joined).toBe("0");
  });

  it.skipIf(!helper)("the enter helper confines as the shell does: the same rlimits, in bytes, and the groups joined", () => {
    const dir = tempDir("reins-confine-helper-");
    const tasks = path.join(dir, "tasks");
    const limits = { ...limitsOf({ cpu: "1", memoryMiB: 64, openFiles: 100, cpuSeconds: 7, diskMiB: 3 }), pids: 50 };
    const confinement = { joins: [tasks], limits, fallback: { memory: true, disk: true }, ownUid: true };
    const report = ["/bin/sh", "-c", 'head -c 1 "$0"; echo; grep -E "^Max (open files|cpu time|address space|file size|processes)" /proc/self/limits', tasks];
    const run = (argv: string[]): string => execFileSync(argv[0], argv.slice(1)).toString();
    const byShell = run(buildConfineArgv(confinement, report));
    writeFileSync(tasks, "");
    const byHelper = run(buildHelperConfineArgv(helper!, confinement, report));
    expect(byHelper).toBe(byShell);
    expect(byHelper.startsWith("0")).toBe(true);
    expect(byHelper).toMatch(new RegExp(`Max file size\\s+${3 * 1024 * 1024}\\s+${3 * 1024 * 1024}\\s+bytes`));
    expect(byHelper).toMatch(new RegExp(`Max address space\\s+${64 * 1024 * 1024}\\s`));
    expect(byHelper).toMatch(/Max processes\s+50\s+50/);
  });

  it("enter through the helper with the same user, namespaces and confinement as the chain", () => {
    const confinement = {
      joins: ["/sys/fs/cgroup/pids/x/tasks"],
      limits: limitsOf({ openFiles: 100 }),
      fallback: { memory: false, disk: false },
      ownUid: false,
    };
    const argv = buildHelperArgv("/cache/reins-enter", { targetPid: 42, uid: 1000, gid: 1001, cwd: "/workspace/x", argv: ["echo", "hi"] }, confinement);
    expect(argv).toEqual([
      "/cache/reins-enter",
      "-t",
      "42",
      "-u",
      "1000",
      "-g",
      "1001",
      "-P",
      "-j",
      "/sys/fs/cgroup/pids/x/tasks",
      "-l",
      "nofile=100",
      "-l",
      "cpu=3600",
      "-C",
      "/workspace/x",
      "--",
      "echo",
      "hi",
    ]);
    const shared = buildHelperArgv("/h", { targetPid: 42, uid: 1, gid: 1, cwd: "/", argv: ["-P"], ownPidNamespace: false }, { ...confinement, joins: [] });
    expect(shared.slice(0, shared.indexOf("--"))).not.toContain("-P");
    expect(shared.slice(-2)).toEqual(["--", "-P"]);
    expect(buildHelperConfineArgv("/h", { ...confinement, joins: [] }, ["/usr/bin/bwrap", "--"])).toEqual([
      "/h",
      "-l",
      "nofile=100",
      "-l",
      "cpu=3600",
      "--",
      "/usr/bin/bwrap",
      "--",
    ]);
  });

  it("cap each writable root with its own tmpfs, owned by the sandbox user", () => {
    const fstab = buildStateFstab({ workspace: "/s/a b/workspace", home: "/s/home", tmp: "/s/tmp" }, 16, 5000, 5001);
    const lines = fstab.trim().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe("tmpfs /s/a\\040b/workspace tmpfs size=16m,nr_inodes=4096,uid=5000,gid=5001,nosuid,nodev,mode=0755 0 0");
    expect(lines[2]).toContain("mode=1777");
  });
});
