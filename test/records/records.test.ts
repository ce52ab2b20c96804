/**
 * The record module: one writer, one reader for call and rollout records. What the proxy writes
 * reads back unchanged, older and foreign files read with defaults, every malformation is a
 * located diagnostic with its catalogued code, and a record's identity comes from registration.
 */
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runTrajectories } from "../../src/cli/commands/trajectories.js";
import { CODES } from "../../src/compiler/contract/codes.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import {
  type CallRecord,
  formatRecordLine,
  formatRecordLines,
  parseCallRecords,
  parseRolloutResults,
  type RolloutResult,
} from "../../src/runtime/records/index.js";
import { httpCall, scriptedModel } from "../proxy/helpers.js";

const call: CallRecord = {
  v: 2,
  rolloutId: "3-0-1",
  try: 2,
  seq: 0,
  dialect: "anthropic-messages",
  model: "claude-sonnet-4-5",
  stream: true,
  promptIds: [1, 2, 3],
  completionIds: [4, 5],
  completionLogprobs: [-0.25, -1.5],
  finishReason: "tool_calls",
  parse: { ok: false, error: "invalid-tool-json", detail: "missing comma" },
  callClass: "subagent",
  reused: [],
  tokenizedPromptTokens: 3,
  weightsVersion: "step-4",
  timings: { receivedMs: 10, firstTokenMs: 12, doneMs: 20 },
};

const result: RolloutResult = {
  id: "3-0-1",
  step: 3,
  task: "greet",
  harness: "claude-code",
  pair: "greet@claude-code",
  attempt: 1,
  category: "files",
  status: "ok",
  reward: 0.5,
  passed: false,
  tries: 2,
  durationMs: 1234,
  phases: { createMs: 70, harnessMs: 900 },
  calls: 1,
  harnessExit: { code: 0, signal: null, timedOut: false },
  verifier: { reward: 0.5, checks: [] },
  retries: [{ code: "SandboxDied", message: "The sandbox died while the harness ran." }],
  weightsVersion: "step-4",
  finishedAt: "2026-01-01T00:00:00.000Z",
};

/** The minimal record another tool may write: only what trajectories need. */
const minimal = (seq: number, promptIds: number[], completionIds: number[]) => ({
  rolloutId: "ext-1",
  seq,
  promptIds,
  completionIds,
  completionLogprobs: completionIds.map(() => -0.1),
});

const codes = (r: { diagnostics: { code: string; line: number }[] }) => r.diagnostics.map((d) => [d.code, d.line]);

describe("writer and reader", () => {
  it("a call record and a rollout result read back exactly as written", () => {
    const second = { ...call, seq: 1, error: { kind: "engine" as const, message: "500" } };
    const calls = parseCallRecords(formatRecordLines([call, second]), "calls.jsonl");
    expect(calls.diagnostics).toEqual([]);
    expect(calls.value).toEqual([call, second]);
    const results = parseRolloutResults(formatRecordLine(result), "rollouts.jsonl");
    expect(results).toEqual({ value: [result], diagnostics: [] });
    expect(formatRecordLine(call).endsWith("}\n")).toBe(true);
    expect(formatRecordLine(call).split("\n")).toHaveLength(2);
  });

  it("reads version 1 lines: the proxy's `rollout`, or the run store's `rolloutId` tag, as try 1", () => {
    const { rolloutId, try: _try, ...rest } = call;
    const proxyLine = { ...rest, v: 1, rollout: "p-7" };
    const storeLine = { ...rest, v: 1, seq: 1, rollout: "3-0-1.t2", rolloutId };
    const r = parseCallRecords(`${JSON.stringify(proxyLine)}\n${JSON.stringify(storeLine)}\n`, "old.jsonl");
    expect(r.diagnostics).toEqual([]);
    expect(r.value.map((c) => [c.v, c.rolloutId, c.try, c.seq])).toEqual([
      [2, "p-7", 1, 0],
      [2, "3-0-1", 1, 1],
    ]);
    expect(r.value[1]).not.toHaveProperty("rollout");
  });

  it("accepts records from other tools with defaults for everything trajectories do not need", () => {
    const r = parseCallRecords(`${JSON.stringify(minimal(0, [1, 2], [3]))}\n`, "ext.jsonl");
    expect(r.diagnostics).toEqual([]);
    expect(r.value[0]).toEqual({
      v: 2,
      rolloutId: "ext-1",
      try: 1,
      seq: 0,
      dialect: "openai-chat",
      model: "",
      stream: false,
      promptIds: [1, 2],
      completionIds: [3],
      completionLogprobs: [-0.1],
      finishReason: "stop",
      parse: { ok: true },
      callClass: "main",
      reused: [],
      tokenizedPromptTokens: 0,
      weightsVersion: "unknown",
      timings: { receivedMs: 0, doneMs: 0 },
    });
    const rollouts = parseRolloutResults(
      '{"id": "x", "step": 0, "task": "t", "harness": "h", "status": "ok", "reward": 1, "passed": true}\n',
      "rollouts.jsonl",
    );
    expect(rollouts.diagnostics).toEqual([]);
    expect(rollouts.value[0]).toMatchObject({ id: "x", pair: "t@h", tries: 1, calls: 0, retries: [], harnessExit: null, verifier: null });
  });

  it("names the line and the catalogued code of every malformed call record", () => {
    const good = minimal(0, [1], [2]);
    const { rolloutId: _id, ...noId } = good;
    const lines = [
      JSON.stringify(good),
      "{not json",
      "[1, 2]",
      JSON.stringify({ ...good, seq: 1, v: 3 }),
      JSON.stringify({ ...noId, seq: 2 }),
      JSON.stringify({ ...noId, seq: 3, rollout: "old-name" }),
      JSON.stringify({ ...good, seq: 4, promptIds: [1, -2] }),
      JSON.stringify({ ...good, seq: 5, try: 0 }),
      JSON.stringify({ ...good, seq: 6, callClass: "helper" }),
      JSON.stringify({ ...good, seq: 7, completionLogprobs: [] }),
      JSON.stringify({ ...good, seq: 0 }),
      JSON.stringify((({ completionIds: _c, ...rest }) => rest)({ ...good, seq: 8 })),
    ];
    const r = parseCallRecords(lines.join("\n"), "calls.jsonl");
    expect(codes(r)).toEqual([
      ["CallRecordNotJson", 2],
      ["CallRecordNotObject", 3],
      ["CallRecordVersion", 4],
      ["CallRecordMissingField", 5],
      ["CallRecordMissingField", 6],
      ["CallRecordInvalidField", 7],
      ["CallRecordInvalidField", 8],
      ["CallRecordInvalidField", 9],
      ["CallRecordLogprobMismatch", 10],
      ["CallRecordDuplicateSeq", 11],
      ["CallRecordMissingField", 12],
    ]);
    expect(r.value.map((c) => c.seq)).toEqual([0]);
    expect(r.diagnostics[1]!.column).toBe(1);
    expect(r.diagnostics[4]!.message).toContain('mark such lines "v": 1');
    expect(r.diagnostics[5]!.message).toContain("promptIds[1]");
    expect(r.diagnostics[10]!.message).toContain("completionIds");
    for (const d of r.diagnostics) expect(d.hint).toBe(CODES[d.code as keyof typeof CODES]);
    expect(codes(parseCallRecords("\n\n", "empty.jsonl"))).toEqual([["CallRecordsEmpty", 1]]);
  });

  it("names the line and the catalogued code of every malformed rollout result", () => {
    const good = JSON.parse(formatRecordLine(result));
    const lines = [
      JSON.stringify(good),
      '{"id": ',
      '"just a string"',
      JSON.stringify({ ...good, id: undefined }),
      JSON.stringify({ ...good, status: "exploded" }),
      JSON.stringify({ ...good, reward: "high" }),
      JSON.stringify({ ...good, retries: [{ code: 1 }] }),
    ];
    const r = parseRolloutResults(lines.join("\n"), "rollouts.jsonl");
    expect(codes(r)).toEqual([
      ["RolloutRecordNotJson", 2],
      ["RolloutRecordNotObject", 3],
      ["RolloutRecordMissingField", 4],
      ["RolloutRecordInvalidField", 5],
      ["RolloutRecordInvalidField", 6],
      ["RolloutRecordInvalidField", 7],
    ]);
    for (const d of r.diagnostics) expect(d.hint).toBe(CODES[d.code as keyof typeof CODES]);
  });

  it("drops a torn last line only when asked (the run store reading its own files)", () => {
    const text = formatRecordLine(result) + formatRecordLine({ ...result, id: "3-0-2" }).slice(0, 40);
    expect(parseRolloutResults(text, "rollouts.jsonl", { tornTail: true })).toMatchObject({ value: [{ id: "3-0-1" }], diagnostics: [] });
    expect(codes(parseRolloutResults(text, "rollouts.jsonl"))).toEqual([["RolloutRecordNotJson", 2]]);
    // A broken line that a newline ended was written whole: not torn, so still reported.
    expect(codes(parseRolloutResults(`${text}\n`, "rollouts.jsonl", { tornTail: true }))).toEqual([["RolloutRecordNotJson", 2]]);
  });

  it("is a leaf: imports only the compiler's contract, node builtins and its own files", () => {
    const dir = "src/runtime/records";
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), "utf8");
      for (const [, from] of text.matchAll(/from "([^"]+)"/g)) {
        expect(/^(\.\/[a-z-]+\.js|\.\.\/\.\.\/compiler\/contract\/[a-z-]+\.js|node:[a-z/]+)$/.test(from!), `${file} imports ${from}`).toBe(true);
      }
    }
  });
});

describe("reins trajectories on another tool's records", () => {
  let dir = "";
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "reins-records-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("builds the tree and the advantages from the five required fields alone", async () => {
    const calls = join(dir, "ext.jsonl");
    const rewards = join(dir, "rewards.json");
    await writeFile(calls, `${[minimal(0, [1, 2, 3], [4, 5]), minimal(1, [1, 2, 3, 4, 5, 6], [7])].map((r) => JSON.stringify(r)).join("\n")}\n`);
    await writeFile(rewards, JSON.stringify({ "ext-1": { reward: 1, task: "t", harness: "h" } }));
    let stdout = "";
    let stderr = "";
    const code = await runTrajectories(
      calls,
      { json: true, rewards },
      { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } },
    );
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const [row] = JSON.parse(stdout).rollouts;
    expect(row).toMatchObject({ rollout: "ext-1", calls: 2, leaves: 1, generatedTokens: 3, trainedTokens: 3, contextTokens: 4, reward: 1 });
  });
});

describe("a record's identity comes from registration", () => {
  it("the proxy stamps the plan's rollout id and try on every record, in memory and in its record file", async () => {
    const dir = await mkdtemp(join(tmpdir(), "reins-records-proxy-"));
    const recordFile = join(dir, "calls.jsonl");
    const proxy = await startProxy({ model: scriptedModel([{ text: "one" }, { text: "two" }]), recordFile, sharedKey: "k-shared" });
    try {
      const reg = proxy.registerRollout("3-0-1.t2", { rolloutId: "3-0-1", try: 2 });
      expect(reg).toMatchObject({ path: "3-0-1.t2", rolloutId: "3-0-1", try: 2 });
      expect(reg.baseUrl).toBe(`${proxy.url}/r/3-0-1.t2`);
      const body = { model: "m", messages: [{ role: "user", content: "hi" }] };
      for (let i = 0; i < 2; i++) {
        const reply = await httpCall(`${reg.baseUrl}/v1/chat/completions`, { body, headers: { authorization: `Bearer ${reg.apiKey}` } });
        expect(reply.status).toBe(200);
      }
      const shared = await httpCall(`${proxy.url}/r/adhoc/v1/chat/completions`, { body, headers: { authorization: "Bearer k-shared" } });
      // the script runs per rollout and try: the shared-key rollout starts at its first turn
      expect(JSON.parse(shared.text).choices[0].message.content).toBe("one");

      const records = proxy.records("3-0-1.t2");
      expect(records.map((r) => [r.v, r.rolloutId, r.try, r.seq])).toEqual([
        [2, "3-0-1", 2, 0],
        [2, "3-0-1", 2, 1],
      ]);
      expect(proxy.records("adhoc").map((r) => [r.rolloutId, r.try, r.seq])).toEqual([["adhoc", 1, 0]]);
      const fromFile = parseCallRecords(await readFile(recordFile, "utf8"), recordFile);
      expect(fromFile.diagnostics).toEqual([]);
      expect(fromFile.value).toEqual([...records, ...proxy.records("adhoc")]);
    } finally {
      await proxy.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
