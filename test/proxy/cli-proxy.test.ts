import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pidAlive } from "../suite-hygiene.js";
import { httpCall } from "./helpers.js";
import { scriptedModelYaml } from "../specs.js";

const ROOT = resolve(import.meta.dirname, "../..");
// Runs the command module directly (independent of how main.ts wires commands).
const ENTRY = `import { Command } from "commander"; import { register } from "./src/cli/commands/proxy.ts";
const p = new Command().exitOverride(); register(p); await p.parseAsync(process.argv.slice(1), { from: "user" });`;

function run(args: string[]): { child: ChildProcess; stdout: () => string; stderr: () => string; exit: Promise<number | null> } {
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", ENTRY, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout!.on("data", (c) => (out += c));
  child.stderr!.on("data", (c) => (err += c));
  const exit = new Promise<number | null>((res) => child.on("exit", (code) => res(code)));
  return { child, stdout: () => out, stderr: () => err, exit };
}

async function waitFor(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("reins proxy", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "reins-cli-proxy-"));
    await writeFile(join(dir, "model.yaml"), scriptedModelYaml({ texts: ["hello there"] }));
    await writeFile(
      join(dir, "bad.yaml"),
      ["apiVersion: reins/v1alpha1", "kind: Model", "metadata: {name: tiny}", "spec:", "  tokenizr: {type: qwen3}", ""].join("\n"),
    );
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("prints its base URL, serves with the key, appends records, stops on SIGTERM", async () => {
    const rec = join(dir, "calls.jsonl");
    const p = run(["proxy", "--config", join(dir, "model.yaml"), "--key", "k-test", "--record", rec]);
    try {
      await waitFor(() => p.stdout().includes("\n"), "the base URL");
      const line = p.stdout().split("\n")[0]!;
      expect(line).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/r\/<rollout-id>$/);
      const base = line.replace("<rollout-id>", "cli-1");
      const denied = await httpCall(`${base}/v1/chat/completions`, {
        body: { model: "m", messages: [{ role: "user", content: "hi" }] },
        headers: { authorization: "Bearer nope" },
      });
      expect(denied.status).toBe(401);
      const ok = await httpCall(`${base}/v1/chat/completions`, {
        body: { model: "m", messages: [{ role: "user", content: "hi" }] },
        headers: { authorization: "Bearer k-test" },
      });
      expect(JSON.parse(ok.text).choices[0].message.content).toBe("hello there");
      p.child.kill("SIGTERM");
      expect(await p.exit).toBe(0);
      const lines = (await readFile(rec, "utf8")).trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ v: 2, rolloutId: "cli-1", try: 1, seq: 0, dialect: "openai-chat", finishReason: "stop" });
    } finally {
      p.child.kill("SIGKILL");
    }
  });

  it("with proxy.processes, says how many, serves rollouts on each and records them all, and leaves no process", async () => {
    const config = join(dir, "model-processes.yaml");
    await writeFile(config, `${await readFile(join(dir, "model.yaml"), "utf8")}  proxy: {processes: 2}\n`);
    const rec = join(dir, "calls-processes.jsonl");
    const p = run(["proxy", "--config", config, "--key", "k-test", "--record", rec]);
    try {
      await waitFor(() => p.stderr().includes("serving model"), "the proxy to serve");
      expect(p.stderr()).toContain("(scripted engine, 2 processes)");
      const base = p.stdout().split("\n")[0]!;
      // paths that hash to each of the two processes
      const ids = ["cli-a", "cli-b", "cli-c", "cli-d", "cli-e", "cli-f"];
      const { ownerOfPath } = await import("../../src/runtime/proxy/processes/protocol.js");
      expect(new Set(ids.map((id) => ownerOfPath(id, 2))).size).toBe(2);
      for (const id of ids) {
        const ok = await httpCall(`${base.replace("<rollout-id>", id)}/v1/chat/completions`, {
          body: { model: "m", messages: [{ role: "user", content: "hi" }] },
          headers: { authorization: "Bearer k-test" },
        });
        expect(JSON.parse(ok.text).choices[0].message.content).toBe("hello there");
      }
      const children = (await readFile(`/proc/${p.child.pid}/task/${p.child.pid}/children`, "utf8")).trim().split(/\s+/).filter(Boolean).map(Number);
      expect(children).toHaveLength(2);
      p.child.kill("SIGTERM");
      expect(await p.exit).toBe(0);
      const records = (await readFile(rec, "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { rolloutId: string });
      expect(records.map((r) => r.rolloutId).sort()).toEqual(ids);
      await waitFor(() => children.every((pid) => !pidAlive(pid)), "the proxy's processes to end", 10_000);
    } finally {
      p.child.kill("SIGKILL");
    }
  }, 60_000);

  it("reports a bad config as a diagnostic and exits 1", async () => {
    const p = run(["proxy", "--config", join(dir, "bad.yaml")]);
    expect(await p.exit).toBe(1);
    expect(p.stderr()).toMatch(/UnknownField|tokenizr/);
    expect(p.stdout()).toBe("");
  });
});
