/**
 * Sandbox start → first command, measured side by side in one run:
 *   local provider (create + exec `echo started`) vs bare bwrap with the same mounts running the
 *   same command (goal: within 1.5×): an agent's sandbox and a verifier's (the verification
 *   environment: role "verifier", its own uid), both through the spawner and the enter helper
 *   (the default), and an agent's sandbox with the runner spawning its processes itself (`native:
 *   false`, the chain nsenter → unshare → setpriv); and, for reference, the podman provider (kube
 *   play of the sandbox Pod + first exec) vs `podman run --rm`.
 * Variants alternate within each round so load affects them alike. Prints medians and ratios.
 * With --runner-mb N the bench first fills N MB of its own memory, as a runner holding a model's
 * tokenizer and a run's records does: a process that forks itself pays for its page tables.
 *   node --import tsx bench/sandbox.ts [--rounds N] [--podman-rounds N] [--runner-mb N]
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { LocalSandboxProvider } from "../src/runtime/sandbox/local/provider.js";
import { buildKeeperArgs, type KeeperLayout } from "../src/runtime/sandbox/local/keeper-args.js";
import { prepareLocalHost } from "../src/runtime/sandbox/local/host.js";
import { findExecutable } from "../src/runtime/sandbox/host/executables.js";
import { PodmanSandboxProvider } from "../src/runtime/sandbox/podman/provider.js";
import { preparePodmanCli, runPodman } from "../src/runtime/sandbox/podman/cli.js";
import { DEFAULT_SANDBOX_IMAGE, SANDBOX_HOME, SANDBOX_WORKSPACE } from "../src/runtime/sandbox/layout.js";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const rounds = arg("--rounds", 20);
const podmanRounds = arg("--podman-rounds", 5);
const runnerMb = arg("--runner-mb", 0);
const held = Array.from({ length: runnerMb }, () => Buffer.alloc(1 << 20, 1));

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function run(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: {}, stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(0) : reject(new Error(`${cmd} exited ${code}: ${err}`))));
  });
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

const root = mkdtempSync(path.join(os.tmpdir(), "reins-bench-sandbox-"));
const rows: { name: string; ms: number[] }[] = [];
const row = (name: string) => {
  const r = { name, ms: [] as number[] };
  rows.push(r);
  return r.ms;
};

try {
  const bwrap = findExecutable("bwrap");
  if (!bwrap) throw new Error("bwrap is not installed (apt-get install -y bubblewrap)");
  const provider = new LocalSandboxProvider({ rootDir: path.join(root, "local") });
  const spawning = new LocalSandboxProvider({ rootDir: path.join(root, "spawning"), native: false });
  const host = await prepareLocalHost(path.join(root, "bare"), 1000, 1000, SANDBOX_HOME, []);
  const localMs = row("local: create + first exec");
  const verifierMs = row("local, verifier's sandbox: create + first exec");
  const spawningMs = row("local, runner's own spawns: create + first exec");
  const bareMs = row("bare bwrap, same mounts");
  const destroyMs = row("local: destroy (not in ratio)");
  const startAndExec = async (
    from: LocalSandboxProvider,
    id: string,
    role?: "verifier",
  ): Promise<{ ms: number; box: Awaited<ReturnType<typeof provider.create>> }> => {
    let box: Awaited<ReturnType<typeof provider.create>> | undefined;
    const ms = await timed(async () => {
      box = await from.create({ id, runId: "bench", network: "none", role });
      const r = await box.exec(["echo", "started"]);
      if (r.stdout !== "started\n") throw new Error(`unexpected output ${JSON.stringify(r)}`);
    });
    return { ms, box: box! };
  };
  for (let i = 0; i < rounds + 1; i++) {
    const dirs = ["ws", "home", "tmp"].map((d) => path.join(root, "bare", `${i}-${d}`));
    for (const d of dirs) mkdirSync(d, { recursive: true });
    const layout: KeeperLayout = {
      hostEntries: host.hostEntries,
      hide: host.hide,
      emptyFile: host.emptyFile,
      passwdFile: host.passwdFile,
      groupFile: host.groupFile,
      workspaceHost: dirs[0],
      homeHost: dirs[1],
      tmpHost: dirs[2],
      workspacePath: SANDBOX_WORKSPACE,
      homePath: SANDBOX_HOME,
      mounts: [],
      hostname: "sandbox",
      network: "none",
    };
    const bareArgs = buildKeeperArgs(layout).filter((a, j, all) => a !== "--info-fd" && all[j - 1] !== "--info-fd");
    const bare = await timed(() => run(bwrap, [...bareArgs, "--", "/bin/echo", "started"]));
    const local = await startAndExec(provider, `bench-${i}`);
    const destroy = await timed(() => local.box.destroy());
    const verifier = await startAndExec(provider, `verifier-${i}`, "verifier");
    await verifier.box.destroy();
    const own = await startAndExec(spawning, `spawning-${i}`);
    await own.box.destroy();
    if (i === 0) continue; // warm-up
    bareMs.push(bare);
    localMs.push(local.ms);
    verifierMs.push(verifier.ms);
    spawningMs.push(own.ms);
    destroyMs.push(destroy);
  }
  await provider.close();
  await spawning.close();

  const podman = findExecutable("podman");
  if (podman && podmanRounds > 0) {
    const cli = await preparePodmanCli(podman, root);
    const hasImage = (await runPodman(cli, ["image", "exists", DEFAULT_SANDBOX_IMAGE])).code === 0;
    if (hasImage) {
      const pods = new PodmanSandboxProvider({ rootDir: path.join(root, "podman") });
      const playMs = row("podman: kube play + first exec");
      const runMs = row("podman run --rm (reference)");
      for (let i = 0; i < podmanRounds; i++) {
        let box: Awaited<ReturnType<typeof pods.create>> | undefined;
        playMs.push(
          await timed(async () => {
            box = await pods.create({ id: `bench-${i}`, runId: "bench", network: "none" });
            await box.exec(["echo", "started"]);
          }),
        );
        await box!.destroy();
        runMs.push(
          await timed(async () => {
            const r = await runPodman(cli, ["run", "--rm", "--network", "none", DEFAULT_SANDBOX_IMAGE, "echo", "started"]);
            if (r.code !== 0) throw new Error(r.stderr);
          }),
        );
      }
      await pods.close();
    } else {
      console.error(`podman rows skipped: no ${DEFAULT_SANDBOX_IMAGE} (run scripts/build-image.sh)`);
    }
  } else if (podmanRounds > 0) {
    console.error("podman rows skipped: podman not installed");
  }

  const width = Math.max(...rows.map((r) => r.name.length));
  console.log(`${"variant".padEnd(width)}  median ms   min ms   n`);
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(width)}  ${median(r.ms).toFixed(1).padStart(9)}  ${Math.min(...r.ms)
        .toFixed(1)
        .padStart(7)}  ${r.ms.length}`,
    );
  }
  const m = (name: string) => median(rows.find((r) => r.name.startsWith(name))?.ms ?? [NaN]);
  const ratio = m("local: create") / m("bare bwrap");
  const verifierRatio = m("local, verifier's") / m("bare bwrap");
  // The goal is against bare bwrap from a small process; a big one makes bare bwrap's own fork dear.
  const met = (r: number): string => (runnerMb > 0 ? "not comparable with the bench's memory held" : r <= 1.5 ? "met" : "not met");
  if (runnerMb > 0) console.log(`\n(the bench held ${held.length} MB of its own memory, as a runner would)`);
  console.log(`\nratio local / bare bwrap: ${ratio.toFixed(2)}x (goal <= 1.5x: ${met(ratio)})`);
  console.log(`ratio local verifier's sandbox / bare bwrap: ${verifierRatio.toFixed(2)}x (goal <= 1.5x: ${met(verifierRatio)})`);
  console.log(`ratio local with the runner's own spawns / bare bwrap: ${(m("local, runner's") / m("bare bwrap")).toFixed(2)}x`);
  if (rows.some((r) => r.name.startsWith("podman: kube"))) {
    console.log(`ratio podman play / podman run: ${(m("podman: kube") / m("podman run")).toFixed(2)}x`);
    console.log(`ratio podman play / local: ${(m("podman: kube") / m("local: create")).toFixed(2)}x`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
