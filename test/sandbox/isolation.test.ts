/**
 * What a harness inside a local sandbox must not be able to do: read another rollout's workspace,
 * the host's home or the runner's environment, write outside its workspace, reach any port but
 * the proxy's, or see and signal host processes.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import type { LocalSandbox } from "../../src/runtime/sandbox/local/sandbox.js";
import { fetchScript, hostPidsWith, startFakeProxy, startOtherServer, tempDir, uniqueMarker, type FakeProxy } from "./helpers.js";

const root = tempDir("reins-iso-");
const runDir = tempDir("reins-iso-run-");
const provider = new LocalSandboxProvider({ rootDir: path.join(root, "sandboxes"), hidePaths: [runDir] });
const secretName = `reins-test-secret-${process.pid}`;
const homeSecret = path.join(os.homedir(), secretName);
const varSecretDir = path.join("/var/tmp", `${secretName}-dir`);
let proxy: FakeProxy;
let a: LocalSandbox;
let b: LocalSandbox;

beforeAll(async () => {
  process.env.REINS_FAKE_SECRET = "sk-host-secret-123";
  writeFileSync(homeSecret, "host home secret");
  writeFileSync(path.join(runDir, "calls.jsonl"), "other rollouts' calls");
  mkdirSync(varSecretDir, { recursive: true });
  writeFileSync(path.join(varSecretDir, "secret"), "var secret");
  proxy = await startFakeProxy(path.join(root, "a.sock"));
  a = (await provider.create({ id: "iso-a", runId: "iso", proxySocketPath: proxy.bridge.path })) as LocalSandbox;
  b = (await provider.create({ id: "iso-b", runId: "iso", network: "none" })) as LocalSandbox;
  await b.writeFiles([{ path: "b-private.txt", content: "b's work" }]);
});

afterAll(async () => {
  delete process.env.REINS_FAKE_SECRET;
  await provider.close();
  await proxy.close();
  rmSync(homeSecret, { force: true });
  rmSync(varSecretDir, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
  rmSync(runDir, { recursive: true, force: true });
});

const sh = (box: LocalSandbox, script: string) => box.exec(["sh", "-c", script]);

describe("local sandbox isolation", () => {
  it("cannot read another sandbox's workspace, by its host path or otherwise", async () => {
    const bHost = b.workspaceHostPath;
    expect(existsSync(path.join(bHost, "b-private.txt"))).toBe(true);
    const r = await sh(
      a,
      `cat ${bHost}/b-private.txt; ls ${path.dirname(bHost)}; grep -rl "b's work" /tmp /home /run /workspace 2>/dev/null; find /tmp /home /run /var /opt /workspace -name b-private.txt 2>/dev/null`,
    );
    expect(r.stdout).not.toContain("b's work");
    expect(r.stdout).not.toContain("b-private.txt");
    expect(r.stderr).toMatch(/No such file or directory/);
  });

  it("sees nothing of the host's home directories or the run directory", async () => {
    const r = await sh(a, `cat ${homeSecret}; ls -A /root /home; cat ${runDir}/calls.jsonl; cat ${varSecretDir}/secret; cat /etc/shadow; echo done`);
    expect(r.stdout).not.toContain("secret");
    expect(r.stdout).not.toContain("other rollouts");
    expect(
      r.stdout
        .trim()
        .split("\n")
        .filter((l) => l && l !== "done" && !l.endsWith(":")),
    ).toEqual(["sandbox"]);
  });

  it("gets none of the runner's environment", async () => {
    expect(process.env.REINS_FAKE_SECRET).toBeDefined();
    const r = await a.exec(["env"]);
    expect(r.stdout).not.toContain("REINS_FAKE_SECRET");
    expect(r.stdout).not.toContain("sk-host-secret-123");
    for (const name of Object.keys(process.env).filter((k) => !["PATH", "HOME", "LANG", "TMPDIR", "PWD"].includes(k))) {
      expect(r.stdout).not.toContain(`${name}=`);
    }
  });

  it("cannot write outside its workspace (and its private /tmp never reaches the host)", async () => {
    const marker = `reins-escape-${process.pid}`;
    const r = await sh(
      a,
      `for p in /${marker} /usr/${marker} /etc/${marker} /var/${marker} /home/${marker} /root/${marker}; do echo x > $p 2>/dev/null && echo WROTE $p; done; echo x > /tmp/${marker} && echo TMP_OK; echo x > /workspace/ok.txt && echo WS_OK`,
    );
    expect(r.stdout).not.toContain("WROTE");
    expect(r.stdout).toContain("TMP_OK");
    expect(r.stdout).toContain("WS_OK");
    for (const p of [`/${marker}`, `/usr/${marker}`, `/etc/${marker}`, `/var/${marker}`, `/tmp/${marker}`]) expect(existsSync(p)).toBe(false);
    expect(existsSync(path.join(a.workspaceHostPath, "ok.txt"))).toBe(true);
  });

  it("reaches the proxy through its loopback port and no other port or address", async () => {
    const other = await startOtherServer();
    try {
      const viaProxy = await a.exec(fetchScript(`${a.proxyUrl}/r/iso-a/v1/models`));
      expect(viaProxy.stdout.trim()).toBe("BODY proxy-ok /r/iso-a/v1/models");
      const direct = await a.exec(fetchScript(`http://127.0.0.1:${other.port}/`));
      expect(direct.stdout.trim()).toBe("ERR ECONNREFUSED");
      const proxyPortDirect = await a.exec(fetchScript(`http://127.0.0.1:${proxy.port}/`));
      expect(proxyPortDirect.stdout.trim()).toBe("ERR ECONNREFUSED");
      const hostAddress = Object.values(os.networkInterfaces())
        .flat()
        .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
      if (hostAddress) {
        const external = await a.exec(fetchScript(`http://${hostAddress}:${other.port}/`));
        expect(external.stdout.trim()).toMatch(/^ERR (ENETUNREACH|EHOSTUNREACH|ECONNREFUSED)/);
      }
      expect(other.hits).toBe(0);
    } finally {
      await other.close();
    }
  });

  it("has no network at all when created without a proxy", async () => {
    const r = await b.exec(fetchScript(`http://127.0.0.1:${proxy.port}/`));
    expect(r.stdout.trim()).toBe("ERR ECONNREFUSED");
    expect(b.proxyUrl).toBeUndefined();
  });

  it("runs commands outside the runner's session (no controlling terminal to inject into)", async () => {
    const marker = uniqueMarker();
    const proc = a.spawn(["sleep", marker]);
    let pids: number[] = [];
    const comm = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
      } catch {
        return "";
      }
    };
    // The wrapper chain (nsenter, unshare, setpriv) carries the marker in its argv until it execs
    // sleep: wait for the sleep process itself.
    for (let i = 0; i < 100 && pids.length === 0; i++) {
      pids = hostPidsWith(marker).filter((pid) => comm(pid) === "sleep");
      await new Promise((r) => setTimeout(r, 20));
    }
    const sessionOf = (pid: number | "self") => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[3];
    expect(pids).toHaveLength(1);
    expect(sessionOf(pids[0])).not.toBe(sessionOf("self"));
    await proc.kill();
  });

  it("sees only its own processes and cannot signal the runner", async () => {
    const r = await sh(
      a,
      `cat /proc/[0-9]*/comm | sort -u | tr '\\n' ' '; echo; kill -0 ${process.pid} 2>&1 && echo SIGNALLED; id -u; grep CapEff /proc/self/status`,
    );
    const [comms, ...rest] = r.stdout.trim().split("\n");
    expect(comms.split(" ")).not.toContain("node");
    expect(comms.split(" ")).toContain("socat");
    expect(r.stdout).not.toContain("SIGNALLED");
    expect(rest).toContain(String(a.uid));
    expect(a.uid).not.toBe(0);
    expect(rest.some((l) => /CapEff:\s+0+$/.test(l))).toBe(true);
  });
});
