/**
 * `reins synth` as a user runs it:
 * - examples/synth/support.yaml (a scripted generator's nine answers): each bad candidate is
 *   dropped by the gate meant to catch it, with its reason; the two good ones are kept with their
 *   provenance, `reins validate` accepts the directory, and the kept tasks pass again;
 * - a hosted generator (local fakes of the Anthropic Messages and OpenAI Chat Completions APIs):
 *   asked with the persona, scenario and skill, the key sent only in the request and written
 *   nowhere; a failing API drops the candidate by the generator gate; a missing key stops the run;
 * - examples/synth/banded.yaml: the difficulty band keeps the candidate its baseline passes 1 time
 *   in 3 and drops the one it never passes, saying the rate; infrastructure failures are no tries;
 * - an output directory that is not empty is refused, nothing in it touched.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reins as launch, reinsAsync } from "../reins-cli.js";
import { tempDir } from "../temp.js";

function reins(args: string[], env: Record<string, string> = {}) {
  return launch(args, { timeout: 600_000, env });
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile());
}

describe("examples/synth/support.yaml", () => {
  const out = join(tempDir("reins-synth-example-"), "families");
  let run: ReturnType<typeof reins>;
  let report: any;
  beforeAll(() => {
    run = reins(["synth", "examples/synth/support.yaml", "--out", out, "--json"]);
    report = JSON.parse(readFileSync(join(out, "synth-report.json"), "utf8"));
  }, 600_000);

  it("prints candidates, kept, drops per gate and the re-verification", () => {
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout);
    expect(summary).toMatchObject({
      candidates: 9,
      kept: 2,
      dropped: { schema: 1, leak: 1, "near-duplicate": 1, reference: 1, "do-nothing": 1, mutation: 2 },
      reverify: { tasks: 6, passed: 6, ok: true },
    });
    expect(summary.families.sort()).toEqual(["faq-plan-price", "open-ticket-count"]);
  });

  it("drops each bad answer by the gate meant for it, saying why", () => {
    const by = (n: number) => report.candidateReports[n - 1];
    expect([1, 2].map((n) => [by(n).kept, by(n).family])).toEqual([
      [true, "faq-plan-price"],
      [true, "open-ticket-count"],
    ]);
    const dropped = (n: number) => [by(n).droppedBy, by(n).gates.at(-1).reason];
    expect(dropped(3)).toEqual(["schema", expect.stringMatching(/family\.yaml:\d+:\d+: (MissingField|UnknownField)/)]);
    expect(dropped(4)).toEqual(["reference", expect.stringContaining("reference passed 0/2: reward 0 (fileEquals contact.txt")]);
    expect(dropped(5)).toEqual(["do-nothing", expect.stringContaining("passes when the agent does nothing")]);
    expect(dropped(6)).toEqual(["leak", expect.stringContaining("Refunds take 14 days")]);
    expect(dropped(7)).toEqual(["near-duplicate", expect.stringContaining("similar to kept family faq-plan-price")]);
    expect(dropped(8)).toEqual(["mutation", expect.stringContaining("still passes with a value in handover.md changed")]);
    // a verifier that trusts `node test.mjs`'s exit status: the fix's module ending at its first line passes it
    expect(dropped(9)).toEqual(["mutation", expect.stringContaining("still passes with src/slug.js ending with status 0 at its first line")]);
    // a dropped candidate's answer is kept for reading; the gates after the failing one did not run
    expect(by(8).answer).toContain("shift-handover");
    expect(by(8).gates.map((g: { gate: string }) => g.gate)).toEqual(["generator", "schema", "leak", "near-duplicate", "reference", "do-nothing", "mutation"]);
    expect(by(4).gates.map((g: { gate: string }) => g.gate)).toEqual(["generator", "schema", "leak", "near-duplicate", "reference"]);
  });

  it("writes the kept families with their provenance; reins validate accepts the directory", () => {
    const family = readFileSync(join(out, "faq-plan-price", "family.yaml"), "utf8");
    expect(family).toContain("reins.dev/generator: scripted");
    expect(family).toMatch(/reins\.dev\/prompt-hash: sha256:[0-9a-f]{64}/);
    expect(family).toContain('reins.dev/seed: "1"');
    expect(family).toContain("reins.dev/persona:");
    const v = reins(["validate", out, "--json"]);
    expect(v.code, v.stdout + v.stderr).toBe(0);
    expect(JSON.parse(v.stdout)).toMatchObject({ ok: true, tasks: 6 });
  }, 300_000);

  it("refuses an output directory that is not empty, touching nothing in it", () => {
    const again = reins(["synth", "examples/synth/support.yaml", "--out", out]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("OutDirNotEmpty");
    expect(filesUnder(out).sort()).toEqual(
      [join(out, "faq-plan-price/family.yaml"), join(out, "open-ticket-count/family.yaml"), join(out, "synth-report.json")].sort(),
    );
  }, 300_000);
});

describe("examples/synth/banded.yaml: the difficulty band", () => {
  it("keeps what the baseline passes 10-90% of the time, drops what it never passes, and says the rate", () => {
    const out = join(tempDir("reins-synth-banded-"), "out");
    const r = reins(["synth", "examples/synth/banded.yaml", "--out", out, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      candidates: 3,
      kept: 1,
      dropped: { difficulty: 1, schema: 1 },
      families: ["open-ticket-count"],
      reverify: { tasks: 3, passed: 3 },
    });
    const report = JSON.parse(readFileSync(join(out, "synth-report.json"), "utf8"));
    const [kept, hard] = report.candidateReports;
    expect(kept.gates.at(-1)).toEqual({
      gate: "difficulty",
      passed: true,
      reason: "the baseline always-one passed 2/6 tries (0.33), within the band [0.1, 0.9]",
    });
    expect(hard).toMatchObject({ family: "faq-plan-price", droppedBy: "difficulty" });
    expect(hard.gates.at(-1).reason).toBe("the baseline always-one passed 0/6 tries (0.00), below the band [0.1, 0.9]");
    expect(reins(["validate", out]).code).toBe(0);
  }, 300_000);

  it("counts tries, not infrastructure failures, and says when the baseline could not try at all", async () => {
    const { judgeDifficulty } = await import("../../src/runtime/synth/difficulty.js");
    const d = { model: { name: "base" } as never, min: 0.1, max: 0.9 };
    const r = (status: string, passed: boolean) =>
      ({ status, passed, error: status === "infra-failed" ? { code: "SandboxFailed", message: "no sandbox" } : undefined }) as never;
    expect(judgeDifficulty(d, [r("ok", true), r("ok", false), r("infra-failed", false)])).toMatchObject({
      passed: true,
      reason: "the baseline base passed 1/2 tries (0.50), within the band [0.1, 0.9]",
    });
    expect(judgeDifficulty(d, [r("ok", true), r("ok", true)])).toMatchObject({
      passed: false,
      reason: "the baseline base passed 2/2 tries (1.00), above the band [0.1, 0.9]",
    });
    expect(judgeDifficulty(d, [r("infra-failed", false)])).toMatchObject({
      passed: false,
      reason: "the baseline base could not try any task: SandboxFailed (no sandbox)",
    });
  });
});

describe("a hosted generator", () => {
  const KEY = "sk-test-synth-0123456789abcdef";
  const answer = readFileSync("examples/synth/answers/02-open-tickets.md", "utf8");
  const seen: { url: string; headers: IncomingMessage["headers"]; body: any }[] = [];
  let server: Server;
  let base: string;
  let failing = false;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = "";
      req.on("data", (d) => (raw += d));
      req.on("end", () => {
        seen.push({ url: req.url!, headers: req.headers, body: JSON.parse(raw) });
        if (failing) {
          res.writeHead(529, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: { message: "overloaded" } }));
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        if (req.url === "/v1/messages")
          res.end(JSON.stringify({ type: "message", role: "assistant", content: [{ type: "text", text: answer }], stop_reason: "end_turn" }));
        else
          res.end(
            JSON.stringify({ object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: answer }, finish_reason: "stop" }] }),
          );
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  function spec(dir: string, api: string, baseUrl: string): string {
    const file = join(dir, "synth.yaml");
    writeFileSync(
      file,
      `apiVersion: reins/v1alpha1
kind: Synthesis
metadata: {name: hosted}
spec:
  personas: [a support lead]
  scenarios: [triaging the queue]
  skills: [count records in a CSV]
  count: 1
  generator: {hosted: {api: ${api}, model: test-model, baseUrl: "${baseUrl}", apiKeyEnv: SYNTH_TEST_KEY}}
  gates: {mutations: false}
  validation: {attempts: 1}
`,
    );
    return file;
  }

  for (const [api, path, keyHeader] of [
    ["anthropic-messages", "/v1/messages", "x-api-key"],
    ["openai-chat", "/chat/completions", "authorization"],
  ] as const) {
    it(`${api}: asked with the combination, its answer gated and kept; the key is written nowhere`, async () => {
      const dir = tempDir("reins-synth-hosted-");
      seen.length = 0;
      const out = join(dir, "out");
      const r = await reinsAsync(["synth", spec(dir, api, base), "--out", out, "--json"], { env: { SYNTH_TEST_KEY: KEY } });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ generator: `${api}:test-model`, candidates: 1, kept: 1, reverify: { tasks: 3, passed: 3 } });
      expect(seen.map((s) => s.url)).toEqual([path]);
      expect(String(seen[0]!.headers[keyHeader])).toContain(KEY);
      const asked = JSON.stringify(seen[0]!.body);
      for (const part of ["a support lead", "triaging the queue", "count records in a CSV", "test-model"]) expect(asked).toContain(part);
      for (const f of filesUnder(out)) expect(readFileSync(f, "utf8"), f).not.toContain(KEY);
      expect(r.stdout + r.stderr).not.toContain(KEY);
      expect(readFileSync(join(out, "open-ticket-count", "family.yaml"), "utf8")).toContain(`reins.dev/generator: ${api}:test-model`);
    }, 300_000);
  }

  it("an API that fails drops the candidate by the generator gate, without the key in the reason", async () => {
    const dir = tempDir("reins-synth-hosted-fail-");
    failing = true;
    try {
      const r = await reinsAsync(["synth", spec(dir, "openai-chat", base), "--out", join(dir, "out"), "--json"], { env: { SYNTH_TEST_KEY: KEY } });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("NothingKept");
      const report = JSON.parse(readFileSync(join(dir, "out", "synth-report.json"), "utf8"));
      expect(report.candidateReports[0]).toMatchObject({ kept: false, droppedBy: "generator" });
      expect(report.candidateReports[0].gates[0].reason).toContain("HTTP 529");
      expect(JSON.stringify(report)).not.toContain(KEY);
    } finally {
      failing = false;
    }
  }, 300_000);

  it("a missing key stops the run with GeneratorKeyMissing before anything is asked", async () => {
    const dir = tempDir("reins-synth-nokey-");
    seen.length = 0;
    const r = await reinsAsync(["synth", spec(dir, "anthropic-messages", base), "--out", join(dir, "out")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("GeneratorKeyMissing");
    expect(r.stderr).toContain("SYNTH_TEST_KEY");
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(seen).toEqual([]);
  }, 300_000);
});

describe("a synthesis in another directory", () => {
  it("reads its answers relative to the spec and refuses answers outside the project", () => {
    const dir = tempDir("reins-synth-copy-");
    cpSync(resolve("examples/synth"), join(dir, "synth"), { recursive: true });
    mkdirSync(join(dir, "synth", "evil"));
    const spec = readFileSync(join(dir, "synth", "support.yaml"), "utf8").replace("answers/01-plan-price.md", "../../../../../../../etc/hostname");
    writeFileSync(join(dir, "synth", "support.yaml"), spec);
    const r = reins(["synth", join(dir, "synth", "support.yaml"), "--out", join(dir, "out")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("OutsideProject");
    expect(readdirSync(dir).sort()).toEqual(["synth"]);
  }, 300_000);
});
