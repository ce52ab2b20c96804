/**
 * Local sandboxes never outlive what made them, and what a dead runner leaves is cleaned by the
 * next one: a runner killed with SIGKILL while a sandbox starts leaves no bwrap, no proxy
 * forwarder and no spawner behind; its control groups go when the next runner prepares its host, even once its
 * state root is removed, while a live runner's groups (empty spares included) stay; closing a
 * provider destroys its spares and the sandboxes still being created.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { detectCgroups, groupsUnder, sandboxGroupParents } from "../../src/runtime/sandbox/host/cgroups.js";
import { pruneStaleGroups } from "../../src/runtime/sandbox/local/host.js";
import { nativeProgram } from "../../src/runtime/sandbox/local/native.js";
import { groupNameFor, ownerStamp } from "../../src/runtime/sandbox/local/owner.js";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import type { LocalSandbox } from "../../src/runtime/sandbox/local/sandbox.js";
import { tempDir } from "./helpers.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const cgroups = detectCgroups();
const made: string[] = [];

function removeMadeGroups(): void {
  for (const dir of made.splice(0)) if (existsSync(dir)) rmdirSync(dir);
}

afterAll(removeMadeGroups);

/** Live processes whose command line contains any of `texts`. */
function processesWith(...texts: string[]): string[] {
  const out: string[] = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      if (texts.some((t) => cmd.includes(t))) out.push(`${pid} ${cmd.slice(0, 200)}`);
    } catch {
      // gone
    }
  }
  return out;
}

async function waitUntilNone(...texts: string[]): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  while (processesWith(...texts).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return processesWith(...texts);
}

/** The control groups recorded in the state directories under `rootDir`. */
function recordedGroups(rootDir: string): string[] {
  const out = new Set<string>();
  for (const name of readdirSync(rootDir).filter((n) => !n.startsWith("."))) {
    try {
      for (const line of readFileSync(path.join(rootDir, name, "cgroups"), "utf8")
        .split("\n")
        .filter(Boolean))
        out.add(line);
    } catch {
      // no groups
    }
  }
  return [...out];
}

/** The groups on this host that carry this process's owner stamp. */
function myGroups(): string[] {
  if (!cgroups) return [];
  const mine = groupNameFor("x", ownerStamp() as string).slice(1);
  return sandboxGroupParents(cgroups)
    .flatMap(groupsUnder)
    .filter((dir) => dir.endsWith(mine));
}

describe("local sandboxes and the runner that made them", () => {
  it.each([
    { when: "as it starts the keeper", kill: `setImmediate(() => process.kill(process.pid, "SIGKILL"))` },
    { when: "once the keeper is on its way", kill: `setTimeout(() => process.kill(process.pid, "SIGKILL"), 4)` },
  ])(
    "a runner killed while its sandbox starts ($when) leaves no bwrap, forwarder or spawner, and the next runner removes its groups",
    async ({ kill }) => {
      const dir = tempDir("reins-keeper-life-");
      const rootDir = path.join(dir, "state");
      const socket = path.join(dir, "proxy.sock");
      const port = 40_000 + Math.floor(Math.random() * 20_000);
      // A runner like `reins run`: one sandbox made (with a spare prepared for the next), then
      // killed with SIGKILL right after it starts the next sandbox's keeper (before bwrap runs), or a
      // little later (its request with the spawner, bwrap on its way).
      const script = `
      import net from "node:net";
      import { LocalSandboxProvider } from "./src/runtime/sandbox/local/provider.ts";
      await new Promise((r) => net.createServer().listen(${JSON.stringify(socket)}, r));
      const provider = new LocalSandboxProvider({ rootDir: ${JSON.stringify(rootDir)} });
      const spec = (id) => ({ id, runId: "r", network: "proxy-only", proxySocketPath: ${JSON.stringify(socket)}, proxyPort: ${port} });
      await provider.create(spec("first"));
      console.log((await provider["spawner"])?.socketPath ?? "");
      await new Promise((r) => setTimeout(r, 100));
      void provider.create(spec("second"));
      ${kill};`;
      const runner = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
      let spawnerSocket = "";
      runner.stdout.on("data", (d: Buffer) => (spawnerSocket += d.toString()));
      let stderr = "";
      runner.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const signal = await new Promise((res) => runner.once("exit", (_code, sig) => res(sig)));
      expect(signal, stderr).toBe("SIGKILL");

      // bwrap names the runner's state root in its arguments; socat listens on the sandbox's port;
      // a spawner names its socket, in a directory of the host's temporary directory.
      expect(await waitUntilNone(rootDir, `TCP-LISTEN:${port},`)).toEqual([]);
      spawnerSocket = spawnerSocket.trim();
      // Where reins's C programs build here, the runner had a spawner.
      if (await nativeProgram("spawn")) expect(spawnerSocket).toMatch(/reins-spawn-/);
      if (spawnerSocket) {
        expect(await waitUntilNone(spawnerSocket)).toEqual([]);
        expect(existsSync(path.dirname(spawnerSocket))).toBe(false);
      }

      // Its state root removed before anyone pruned it, as a test's temporary directory is.
      const groups = recordedGroups(rootDir);
      if (cgroups) expect(groups.length).toBeGreaterThan(0);
      rmSync(rootDir, { recursive: true, force: true });

      // The next runner (another state root) prepares its host: the dead runner's groups are gone
      // (any runner on this host that prepares its host meanwhile removes them too).
      const next = new LocalSandboxProvider({ rootDir: path.join(dir, "next") });
      try {
        await next.create({ id: "next", runId: "r", network: "none" });
        expect(groups.filter(existsSync)).toEqual([]);
      } finally {
        await next.close();
      }
    },
    60_000,
  );

  it.skipIf(!cgroups)(
    "pruning removes only the groups of runners that no longer run, never a live runner's",
    async () => {
      const host = cgroups!;
      const live = new LocalSandboxProvider({ rootDir: tempDir("reins-keeper-live-") });
      try {
        const box = (await live.create({ id: "live", runId: "r", network: "none" })) as LocalSandbox;
        await new Promise((r) => setTimeout(r, 100)); // its spare: empty groups, made in advance
        const liveGroups = recordedGroups(live.rootDir);
        expect(new Set(liveGroups.map((g) => path.basename(g))).size).toBe(2); // the sandbox's and the spare's

        const parent = Object.values(host.parents)[0] as string;
        const group = (name: string): string => {
          const dir = path.join(parent, name);
          mkdirSync(dir);
          made.push(dir);
          return dir;
        };
        const dead = group(groupNameFor("/x/s0-p5-a1-dead01", "999999999 1")); // no such pid
        const reused = group(groupNameFor("/x/s0-p5-a1-reuse1", `${process.pid} 1`)); // this pid, another start time
        const mine = group(groupNameFor("/x/s0-p5-a1-mine01", ownerStamp() as string));
        const otherNamespace = group(`s0-p5-a1-other1@1.999999999.1`);
        const unnamed = group("s0-p5-a1-legacy");

        await pruneStaleGroups(host);
        expect(existsSync(dead)).toBe(false);
        expect(existsSync(reused)).toBe(false);
        expect([mine, otherNamespace, unnamed].filter(existsSync)).toEqual([mine, otherNamespace, unnamed]);
        expect(liveGroups.filter(existsSync)).toEqual(liveGroups);
        expect((await box.exec(["true"])).exitCode).toBe(0);
      } finally {
        removeMadeGroups();
        await live.close();
      }
    },
    60_000,
  );

  it("closing a provider destroys its spares and the sandboxes still being created", async () => {
    const dir = tempDir("reins-keeper-close-");
    const socket = path.join(dir, "proxy.sock");
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(socket, r));
    const port = 40_000 + Math.floor(Math.random() * 20_000);
    const provider = new LocalSandboxProvider({ rootDir: path.join(dir, "state") });
    const spec = (id: string) => ({ id, runId: "r", network: "proxy-only" as const, proxySocketPath: socket, proxyPort: port });
    try {
      await provider.create(spec("one"));
      await new Promise((r) => setTimeout(r, 100)); // a spare is made
      const late = provider.create(spec("two"));
      await provider.close();
      const two = (await late) as LocalSandbox;
      expect(await two.exec(["true"]).catch((e: { kind?: string }) => e.kind)).toBe("died");
      expect(await waitUntilNone(provider.rootDir, `TCP-LISTEN:${port},`)).toEqual([]);
      expect(readdirSync(provider.rootDir).filter((n) => !n.startsWith("."))).toEqual([]);
      expect(myGroups()).toEqual([]);
    } finally {
      await provider.close();
      await new Promise((r) => server.close(r));
    }
  }, 60_000);
});
