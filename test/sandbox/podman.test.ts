/**
 * The podman provider, for real: it plays the kubernetes provider's Pod manifest with
 * `podman kube play`. Skipped only when podman is missing AND REINS_SKIP_PODMAN=1.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/runtime/sandbox/host/executables.js";
import { PodmanSandboxProvider } from "../../src/runtime/sandbox/podman/provider.js";
import type { PodmanSandbox } from "../../src/runtime/sandbox/podman/sandbox.js";
import { runPodman } from "../../src/runtime/sandbox/podman/cli.js";
import { buildSandboxPod, podName } from "../../src/runtime/sandbox/kubernetes/manifests.js";
import { adaptPodForPodman } from "../../src/runtime/sandbox/podman/manifest.js";
import { validateManifest } from "../../src/runtime/k8s/validate.js";
import { baseEnvironment, SANDBOX_HOME } from "../../src/runtime/sandbox/layout.js";
import { fetchScript, startFakeProxy, startOtherServer, tempDir, type FakeProxy } from "./helpers.js";

const podman = findExecutable("podman");
const skip = !podman && process.env.REINS_SKIP_PODMAN === "1";
const root = tempDir("reins-podman-test-");

describe.skipIf(skip)("podman provider", () => {
  let provider: PodmanSandboxProvider;
  let proxy: FakeProxy;
  let box: PodmanSandbox;

  beforeAll(async () => {
    if (!podman) throw new Error("podman is not installed (apt-get install -y podman runc catatonit busybox-static socat), or set REINS_SKIP_PODMAN=1");
    execFileSync("bash", [path.resolve("scripts/build-image.sh")], { stdio: "inherit" });
    provider = new PodmanSandboxProvider({ rootDir: path.join(root, "pods") });
    proxy = await startFakeProxy(path.join(root, "proxy.sock"));
    box = (await provider.create({
      id: "pod-0",
      runId: "podman-test",
      task: "hello",
      harness: "shell",
      proxySocketPath: proxy.bridge.path,
      env: { GREETING: "hi" },
      resources: { cpu: "1", memoryMiB: 256 },
      timeoutSeconds: 600,
    })) as PodmanSandbox;
  }, 180_000);

  afterAll(async () => {
    await provider?.close();
    await proxy?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("plays the kubernetes provider's Pod, adapted only where podman needs it", () => {
    const identity = { runId: `podman-test-${provider.instance}`, rolloutId: "pod-0", task: "hello", harness: "shell" };
    expect(box.podName).toBe(podName(identity));
    const played = box.state.manifest;
    const base = buildSandboxPod({
      identity,
      namespace: "default",
      image: "localhost/reins-sandbox:1",
      resources: { cpu: "1", memoryMiB: 256 },
      deadlineSeconds: 600,
      env: { ...baseEnvironment(SANDBOX_HOME), GREETING: "hi" },
    });
    const dirs = box.state.dirs;
    const expected = adaptPodForPodman(base, {
      workspaceHost: dirs.workspace,
      homeHost: dirs.home,
      tmpHost: dirs.tmp,
      nodeHost: process.execPath,
      proxy: { socketHost: proxy.bridge.path, port: 18080 },
    });
    expect(played).toEqual(expected);
    expect(validateManifest(base)).toEqual([]);
    expect(validateManifest(played)).toEqual([]);
    const onDisk = parse(readFileSync(path.join(box.state.stateDir, "pod.yaml"), "utf8"));
    expect(onDisk).toEqual(played);
  });

  it("runs commands as the sandbox user with the explicit env, a read-only root and no capabilities", async () => {
    const r = await box.exec(
      ["sh", "-c", 'id -u; pwd; echo "$GREETING"; touch /x 2>&1; grep CapEff /proc/self/status; env | cut -d= -f1 | sort | tr "\\n" " "'],
      { env: { EXTRA: "1" } },
    );
    const lines = r.stdout.trim().split("\n");
    expect(lines.slice(0, 3)).toEqual(["1000", "/workspace", "hi"]);
    expect(r.stdout).toMatch(/Read-only file system/);
    expect(r.stdout).toMatch(/CapEff:\s+0+\n/);
    expect(lines.at(-1)).not.toMatch(/CONTAINERS_CONF|REINS/);
    expect((await box.exec(["sh", "-c", "exit 4"])).exitCode).toBe(4);
    expect((await box.exec(["cat"], { stdin: "through stdin" })).stdout).toBe("through stdin");
  });

  it("writes and reads workspace files, seen on both sides", async () => {
    await box.writeFiles([
      { path: "task/input.txt", content: "from host" },
      { path: "/home/sandbox/.tool/config", content: "cfg" },
    ]);
    const r = await box.exec(["sh", "-c", "cat task/input.txt; echo; cat ~/.tool/config; echo made > out.txt"]);
    expect(r.stdout).toBe("from host\ncfg");
    expect((await box.readFile("out.txt")).toString()).toBe("made\n");
    expect(await box.listFiles()).toEqual(["out.txt", "task/input.txt"]);
    expect(readFileSync(path.join(box.workspaceHostPath, "out.txt"), "utf8")).toBe("made\n");
  });

  it("reaches the proxy through the forwarder and nothing else", async () => {
    const other = await startOtherServer();
    try {
      expect((await box.exec(fetchScript(`${box.proxyUrl}/r/pod-0/v1`))).stdout.trim()).toBe("BODY proxy-ok /r/pod-0/v1");
      expect((await box.exec(fetchScript(`http://127.0.0.1:${other.port}/`))).stdout.trim()).toMatch(/^ERR (ECONNREFUSED|ENETUNREACH)/);
      expect(other.hits).toBe(0);
    } finally {
      await other.close();
    }
  });

  it("kills a timed-out command with everything it started", async () => {
    const r = await box.exec(["sh", "-c", "setsid sleep 301 & sleep 302"], { timeoutMs: 1000 });
    expect(r.timedOut).toBe(true);
    const ps = await box.exec(["ps", "-o", "args"]);
    expect(ps.stdout).not.toMatch(/sleep 30[12]/);
  });

  it("stopProcesses kills every process in the pod, daemons included, and keeps the pod and its files", async () => {
    const r = await box.exec(["sh", "-c", "echo kept > kept.txt; setsid sh -c 'trap \"\" TERM HUP; sleep 303' >/dev/null 2>&1 & (sleep 304 &); exit 0"]);
    expect(r.exitCode).toBe(0);
    expect((await box.exec(["ps", "-o", "args"])).stdout).toMatch(/sleep 303/);
    await box.stopProcesses();
    expect((await box.exec(["ps", "-o", "args"])).stdout).not.toMatch(/sleep 30[34]/);
    expect(await box.alive()).toBe(true);
    expect((await box.readFile("kept.txt")).toString()).toBe("kept\n");
  });

  it("copies files over exec (the kubernetes path) against the real container", async () => {
    const viaExec = new PodmanSandboxProvider({ rootDir: path.join(root, "pods-exec"), fileTransfer: "exec" });
    try {
      const s = await viaExec.create({ id: "pod-exec", runId: "podman-test", network: "none" });
      const binary = new Uint8Array(300_000).map((_, i) => (i * 7) % 256);
      await s.writeFiles([
        { path: "deep/dir/data.bin", content: binary, mode: 0o600 },
        { path: "notes.md", content: "# notes\n" },
      ]);
      expect(await s.listFiles()).toEqual(["deep/dir/data.bin", "notes.md"]);
      expect(Buffer.compare(await s.readFile("deep/dir/data.bin"), Buffer.from(binary))).toBe(0);
      expect((await s.exec(["stat", "-c", "%a %u", "deep/dir/data.bin"])).stdout.trim()).toBe("600 1000");
      await expect(s.readFile("missing.txt")).rejects.toThrow(/not a regular file/);
      expect(s.proxyUrl).toBeUndefined();
      // The workspace out again as the verifier takes it: busybox tar -c streamed over exec.
      await s.exec(["sh", "-c", "ln -s /etc/passwd leak && mkdir empty"]);
      const snapshot = path.join(root, "snapshot");
      mkdirSync(snapshot);
      const report = await s.copyOut(".", snapshot);
      expect(report).toMatchObject({ files: 2, symlinks: 1, skipped: [] });
      expect(Buffer.compare(readFileSync(path.join(snapshot, "deep/dir/data.bin")), Buffer.from(binary))).toBe(0);
      expect(readFileSync(path.join(snapshot, "notes.md"), "utf8")).toBe("# notes\n");
      expect(readlinkSync(path.join(snapshot, "leak"))).toBe("/etc/passwd");
      expect(statSync(path.join(snapshot, "empty")).isDirectory()).toBe(true);
      // Links and empty directories in, as the verifier's sandbox gets them: busybox tar -x as the sandbox user.
      const longTarget = `../${"t".repeat(150)}`;
      await s.writeFiles([], {
        directories: [{ path: "out/empty" }],
        links: [
          { path: "node_modules/.bin/x", target: "../x/cli.js" },
          { path: "abs", target: "/etc/hostname" },
          { path: "long", target: longTarget },
        ],
      });
      const seen = await s.exec([
        "sh",
        "-c",
        'for f in node_modules/.bin/x abs long; do readlink "$f"; done; ls -A out/empty | wc -l; stat -c %u abs out/empty',
      ]);
      expect(
        seen.stdout
          .trim()
          .split("\n")
          .map((l) => l.trim()),
      ).toEqual(["../x/cli.js", "/etc/hostname", longTarget, "0", "1000", "1000"]);
    } finally {
      await viaExec.close();
    }
  });

  it("reports a pod killed from outside as died", async () => {
    const victim = (await provider.create({ id: "pod-victim", runId: "podman-test", network: "none" })) as PodmanSandbox;
    await runPodman(victim.state.cli, ["pod", "kill", victim.podName]);
    await expect(victim.exec(["true"])).rejects.toMatchObject({ kind: "died" });
    await victim.destroy();
  });

  it("a second run of the same plan gets pods of its own: the first run's sandbox keeps running", async () => {
    const first = (await provider.create({ id: "pod-twice", runId: "podman-test", network: "none" })) as PodmanSandbox;
    const other = new PodmanSandboxProvider({ rootDir: path.join(root, "pods-2") });
    try {
      const second = (await other.create({ id: "pod-twice", runId: "podman-test", network: "none" })) as PodmanSandbox;
      expect(second.podName).not.toBe(first.podName);
      expect((await first.exec(["echo", "still here"])).stdout.trim()).toBe("still here");
      expect((await second.exec(["echo", "me too"])).stdout.trim()).toBe("me too");
      await second.destroy();
      expect((await first.exec(["true"])).exitCode).toBe(0);
    } finally {
      await first.destroy();
      await other.close();
    }
  });

  it("a runner killed with its pods running: the next provider on its root removes its pods, mounts and state, and keeps a live runner's", async () => {
    const shared = path.join(root, "pods-orphans");
    const live = new PodmanSandboxProvider({ rootDir: shared });
    const next = new PodmanSandboxProvider({ rootDir: shared });
    const script = path.join(root, "runner.mts");
    writeFileSync(
      script,
      `import { PodmanSandboxProvider } from ${JSON.stringify(path.resolve("src/runtime/sandbox/podman/provider.ts"))};
const box = await new PodmanSandboxProvider({ rootDir: ${JSON.stringify(shared)} }).create({ id: "orphan", runId: "podman-test", network: "none" });
process.stdout.write(JSON.stringify({ pod: box.podName, stateDir: box.state.stateDir }) + "\\n");
setInterval(() => undefined, 1000);
`,
    );
    const runner = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const kept = (await live.create({ id: "kept", runId: "podman-test", network: "none" })) as PodmanSandbox;
      const line = await new Promise<string>((resolve, reject) => {
        runner.stdout.once("data", (d: Buffer) => resolve(d.toString()));
        runner.once("exit", (code) => reject(new Error(`the runner exited ${code}`)));
      });
      const orphan = JSON.parse(line) as { pod: string; stateDir: string };
      runner.kill("SIGKILL");
      await new Promise((resolve) => runner.once("exit", resolve));
      const mountedUnder = (dir: string) =>
        readFileSync("/proc/self/mountinfo", "utf8")
          .split("\n")
          .filter((l) => (l.split(" ")[4] ?? "").startsWith(`${dir}/`));
      expect((await runPodman(kept.state.cli, ["pod", "exists", orphan.pod])).code).toBe(0);
      if (process.getuid?.() === 0) expect(mountedUnder(orphan.stateDir).length).toBe(3);
      // The next runner's first sandbox prepares the host: what the dead one left goes.
      const fresh = (await next.create({ id: "fresh", runId: "podman-test", network: "none" })) as PodmanSandbox;
      expect((await runPodman(kept.state.cli, ["pod", "exists", orphan.pod])).code).not.toBe(0);
      expect(existsSync(orphan.stateDir)).toBe(false);
      expect(mountedUnder(orphan.stateDir)).toEqual([]);
      expect((await kept.exec(["echo", "alive"])).stdout.trim()).toBe("alive");
      expect(existsSync(kept.state.stateDir)).toBe(true);
      await fresh.destroy();
    } finally {
      runner.kill("SIGKILL");
      await live.close();
      await next.close();
    }
  }, 120_000);

  it("destroy removes the pod, its containers and its state", async () => {
    const doomed = (await provider.create({ id: "pod-doomed", runId: "podman-test", network: "none" })) as PodmanSandbox;
    const proc = doomed.spawn(["sleep", "300"]);
    await doomed.destroy();
    expect((await proc.wait()).signal).toBe("SIGKILL");
    const exists = await runPodman(doomed.state.cli, ["pod", "exists", doomed.podName]);
    expect(exists.code).not.toBe(0);
    expect(existsSync(doomed.state.stateDir)).toBe(false);
  });
});
