/**
 * The real harnesses inside sandboxes, through `reins eval`'s executor: Claude Code, Codex and
 * OpenClaw each solve the starter task (hello.txt containing hi) in a local sandbox, twice, with
 * their scripted policies (examples/proxy/<harness>.yaml), and the verifier scores every attempt 1;
 * Claude Code also in podman, with the shipped Sandbox spec `podman` (its two rollouts at once).
 * One evaluation per harness and provider; each test below checks one property of that run:
 * - the harness runs from its install, mounted read-only (its user cannot write into it);
 * - its config and HOME are written for each rollout (the second rollout finds nothing of the first);
 * - its telemetry and update checks are off (the spec's opt-outs reach its env and config);
 * - the network is the proxy and nothing else (the host, its loopback, the proxy's own port, the
 *   internet and DNS are all out of reach from the harness's sandbox);
 * - the proxy key is the rollout's own (no key, a forged one, or the previous rollout's is refused);
 * - what the harness printed is kept in the run directory, harness-output/<rollout>.stdout|stderr,
 *   and the workspace before → after, workspace-diff/<rollout>.json.
 * Skipped only with REINS_SKIP_REAL_HARNESSES=1; the podman run as test/sandbox/podman.test.ts is.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/runtime/sandbox/host/executables.js";
import { SANDBOX_HOME } from "../../src/runtime/sandbox/layout.js";
import { loadHarnessSpec } from "../harness/harness-spec.js";
import { skipHarness, skipNote } from "../harness/scenario.js";
import { describeInSandbox, runInSandbox, type InSandboxRun } from "./in-sandbox-run.js";

const ATTEMPTS = 2;
const skipPodman = !findExecutable("podman") && process.env.REINS_SKIP_PODMAN === "1";

function describeInSandboxRun(harness: string, provider: "local" | "podman" | "podman-image"): void {
  const podman = provider !== "local";
  const skip = skipHarness(harness) || (podman && skipPodman);
  const note = skipNote(harness) || (podman && skipPodman ? " (skipped: no podman and REINS_SKIP_PODMAN=1)" : "");
  describe.skipIf(skip)(`${harness} in a ${provider} sandbox through reins eval${note}`, () => {
    const spec = loadHarnessSpec(harness);
    let run: InSandboxRun;
    let why: () => string;
    beforeAll(async () => {
      if (podman) {
        if (!findExecutable("podman"))
          throw new Error("podman is not installed (apt-get install -y podman runc catatonit busybox-static socat), or set REINS_SKIP_PODMAN=1");
        execFileSync("bash", [path.resolve("scripts/build-image.sh")], { stdio: "inherit" });
      }
      // Podman: the shipped Sandbox spec (specs/sandboxes/podman.yaml; its rollouts run at once);
      // podman-image: the harness, its node and reins-agent built into the harness's image, nothing mounted.
      const sandbox =
        provider === "podman"
          ? `{name: podman}`
          : provider === "podman-image"
            ? `{provider: podman, harnessFiles: image, concurrency: 2, retries: 1}`
            : `{provider: local, concurrency: 1, retries: 1}`;
      run = await runInSandbox({ harness, sandbox, attempts: ATTEMPTS });
      why = () => describeInSandbox(run);
      const each = run.results.map((r) => `${r.id} ${r.durationMs} ms (harness ${r.phases.harnessMs} ms)`).join(", ");
      console.info(`${harness} in ${provider}: evaluation ${run.wallMs} ms; ${each}`);
    }, 1_200_000);

    it("solves every attempt, scored 1 by the verifier, in one try each", () => {
      expect(
        run.results.map((r) => [r.status, r.reward, r.tries]),
        why(),
      ).toEqual(Array.from({ length: ATTEMPTS }, () => ["ok", 1, 1]));
      expect(run.launches.map((l) => l.tryId).sort()).toEqual(run.results.map((r) => r.id).sort());
      expect(
        run.launches.every((l) => l.probeError === undefined && l.before && l.after),
        why(),
      ).toBe(true);
      // Each rollout's calls went through the proxy: the write, then the final answer.
      for (const r of run.results) expect(run.calls.filter((c) => c.rolloutId === r.id).length, why()).toBeGreaterThanOrEqual(2);
    });

    it("keeps what the harness printed in the run directory, under harness-output/<rollout>", () => {
      const dir = path.join(run.runDir, "harness-output");
      expect(readdirSync(dir).sort()).toEqual(run.results.flatMap((r) => [`${r.id}.stderr`, `${r.id}.stdout`]).sort());
      for (const launch of run.launches) {
        const stdout = readFileSync(path.join(dir, `${launch.tryId}.stdout`), "utf8");
        expect(stdout.length).toBeGreaterThan(0);
        expect(stdout).toBe(launch.exit!.stdout);
        expect(readFileSync(path.join(dir, `${launch.tryId}.stderr`), "utf8")).toBe(launch.exit!.stderr);
      }
    });

    it("keeps each rollout's workspace diff: hello.txt added, containing hi", () => {
      const dir = path.join(run.runDir, "workspace-diff");
      expect(readdirSync(dir).sort()).toEqual(run.results.map((r) => `${r.id}.json`).sort());
      for (const r of run.results) {
        const diff = JSON.parse(readFileSync(path.join(dir, `${r.id}.json`), "utf8"));
        const hello = diff.files.find((f: { path: string }) => f.path === "hello.txt");
        expect(hello, JSON.stringify(diff)).toMatchObject({ status: "added", kind: "text", bytesBefore: null });
        expect(hello.patch).toMatch(/^\+hi$/m);
        expect(diff.added).toBeGreaterThanOrEqual(1);
      }
    });

    it.runIf(provider === "podman-image")("runs from its own image, tagged by content, with nothing of this machine mounted", () => {
      for (const launch of run.launches) {
        expect(launch.spec.image).toMatch(new RegExp(`^localhost/reins-harness-${harness}:[0-9a-f]{16}$`));
        expect(launch.spec.selfContained).toBe(true);
        expect(launch.spec.mounts ?? []).toEqual([]);
        for (const report of [launch.before!, launch.after!]) expect(report.uid).not.toBe(0);
        const label = execFileSync("podman", ["image", "inspect", "--format", '{{index .Labels "reins.dev/harness"}}', launch.spec.image!], {
          encoding: "utf8",
        });
        expect(label.trim()).toBe(harness);
      }
      expect(new Set(run.launches.map((l) => l.spec.image)).size).toBe(1);
    });

    it.skipIf(provider === "podman-image")("runs from its install, mounted read-only: the harness's user cannot write into it", () => {
      for (const launch of run.launches) {
        const mounts = launch.spec.mounts ?? [];
        const install = mounts.find((m) => m.hostPath.includes(`${path.sep}harnesses${path.sep}`) && launch.argv[0]!.startsWith(m.sandboxPath + path.sep));
        expect(install, `${launch.argv[0]} is not inside a harness install mount: ${JSON.stringify(mounts)}`).toBeDefined();
        expect(mounts.every((m) => m.readOnly !== false)).toBe(true);
        for (const report of [launch.before!, launch.after!]) {
          expect(report.uid).not.toBe(0);
          expect(Object.keys(report.mountWrites).sort()).toEqual(mounts.map((m) => m.sandboxPath).sort());
          for (const [mount, outcome] of Object.entries(report.mountWrites)) expect(outcome, mount).toMatch(/^(EROFS|EACCES|EPERM)$/);
        }
        for (const m of mounts) expect(readdirSync(m.hostPath).filter((n) => n.startsWith(".reins-probe-"))).toEqual([]);
      }
    });

    it("writes its config into a fresh HOME for each rollout, pointing at that rollout's proxy path", () => {
      const configs = spec.homeFiles.map((f) => f.path).sort();
      for (const [i, launch] of run.launches.entries()) {
        expect(launch.env.HOME).toBe(SANDBOX_HOME);
        // Before the harness starts, HOME holds its config files and nothing else.
        expect(launch.before!.home, why()).toEqual(configs);
        const said = [...Object.values(launch.env), ...Object.values(launch.before!.homeFiles)].join("\n");
        expect(said).toContain(`/r/${launch.tryId}`);
        for (const other of run.launches.filter((_, j) => j !== i)) expect(said).not.toContain(`/r/${other.tryId}/`);
      }
      // The harness does write into HOME; no other rollout starts with any of it.
      for (const launch of run.launches)
        expect(launch.after!.home.filter((f) => !configs.includes(f)).length, JSON.stringify(launch.after!.home)).toBeGreaterThan(0);
    });

    it("launches with telemetry and update checks off", () => {
      for (const launch of run.launches) {
        for (const [name, value] of Object.entries(spec.optOuts)) expect(launch.env[name], name).toBe(value);
        if (harness === "codex") {
          const config = launch.before!.homeFiles[".codex/config.toml"]!;
          expect(config).toMatch(/^check_for_update_on_startup = false$/m);
          for (const table of ["analytics", "feedback"]) expect(config).toMatch(new RegExp(`^\\[${table}\\]\\nenabled = false$`, "m"));
          expect(config).toMatch(/^\[otel\]\nexporter = "none"$/m);
        }
      }
      if (harness === "claude-code")
        expect(Object.keys(spec.optOuts)).toEqual(
          expect.arrayContaining(["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER"]),
        );
    });

    it("reaches the proxy and nothing else: not the host, its loopback, the proxy's own port, the internet or DNS", () => {
      for (const launch of run.launches) {
        for (const report of [launch.before!, launch.after!]) {
          expect(report.proxy.own, why()).toBe(200);
          expect(Object.keys(report.connections).length).toBeGreaterThanOrEqual(3);
          for (const [target, outcome] of Object.entries(report.connections)) expect(outcome, target).not.toBe("connected");
          expect(report.dns).not.toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        }
      }
      expect(run.hostConnections).toBe(0);
    });

    it("holds a key of its own: no key, a forged key or the previous rollout's key is refused", () => {
      const keys = run.launches.map((l) => l.apiKey);
      expect(keys.every((k) => k !== undefined)).toBe(true);
      expect(new Set(keys).size).toBe(keys.length);
      // Every launch but the first tried the key of the launch before it.
      expect(run.launches.filter((l) => l.before!.proxy.previous !== undefined).length).toBe(ATTEMPTS - 1);
      for (const launch of run.launches) {
        for (const report of [launch.before!, launch.after!]) {
          expect(report.proxy.none).toBe(401);
          expect(report.proxy.forged).toBe(401);
          if (report.proxy.previous !== undefined) expect(report.proxy.previous).toBe(401);
        }
      }
    });
  });
}

describeInSandboxRun("claude-code", "local");
describeInSandboxRun("codex", "local");
describeInSandboxRun("openclaw", "local");
describeInSandboxRun("claude-code", "podman");
describeInSandboxRun("claude-code", "podman-image");
