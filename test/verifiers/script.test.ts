import { existsSync } from "node:fs";
import { chmod, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ResolvedFile } from "../../src/compiler/contract/plan.js";
import { normalizeCheck } from "../../src/compiler/resolve/verifier.js";
import { DirectoryReader } from "../../src/runtime/verifiers/directory-reader.js";
import { parseScriptOutput } from "../../src/runtime/verifiers/script.js";
import { runVerifier } from "../../src/runtime/verifiers/verify.js";
import { makeWorkspace, verifier } from "./fixture.js";

const hidden = (path: string, content: string, mode = 0o644): ResolvedFile => ({ path, content, encoding: "utf8", mode, digest: "sha256:0" });

function scriptVerifier(command: string, timeoutSeconds = 30) {
  return verifier({ script: { command: ["sh", "-c", command], timeoutSeconds } });
}

describe("parseScriptOutput", () => {
  it("takes the whole output or its last JSON line", () => {
    expect(parseScriptOutput('{"reward": 1}')).toEqual({ ok: true, reward: 1, subscores: {} });
    expect(parseScriptOutput('running tests...\n{"reward": 0.5}\n{"reward": 0.75, "subscores": {"a": 1, "b": "x"}}\n')).toEqual({
      ok: true,
      reward: 0.75,
      subscores: { a: 1 },
    });
    expect(parseScriptOutput('{\n  "reward": 0.2\n}\n')).toMatchObject({ ok: true, reward: 0.2 });
  });
  it("garbage, missing and out-of-range rewards are errors, never 0", () => {
    expect(parseScriptOutput("")).toMatchObject({ ok: false, code: "ScriptOutputInvalid" });
    expect(parseScriptOutput("all good!")).toMatchObject({ ok: false, code: "ScriptOutputInvalid" });
    expect(parseScriptOutput('{"score": 1}')).toMatchObject({ ok: false, code: "ScriptOutputInvalid" });
    expect(parseScriptOutput('{"reward": "1"}')).toMatchObject({ ok: false, code: "ScriptRewardInvalid" });
    expect(parseScriptOutput('{"reward": 1.5}')).toEqual({ ok: false, code: "ScriptRewardInvalid", message: "the script's reward 1.5 is outside [0, 1]" });
    expect(parseScriptOutput("\u0000\u0001\u00ff{{{")).toMatchObject({ ok: false, code: "ScriptOutputInvalid" });
  });
});

describe("script verifier", () => {
  it("reads the hidden files through $REINS_HIDDEN, which is not in the workspace and is removed after", async () => {
    const ws = await makeWorkspace({ "answer.txt": "42\n" });
    const cmd =
      'echo "$REINS_HIDDEN" > seen-dir; if [ "$(cat answer.txt)" = "$(cat "$REINS_HIDDEN/expected.txt")" ]; then echo \'{"reward": 1, "subscores": {"exact": 1}}\'; else echo \'{"reward": 0}\'; fi';
    const r = await runVerifier(scriptVerifier(cmd), { reader: new DirectoryReader(ws), instruction: "x", hiddenFiles: [hidden("expected.txt", "42\n")] });
    expect(r).toMatchObject({ status: "ok", reward: 1, passed: true });
    expect(r.parts.script?.subscores).toEqual({ exact: 1 });
    const { readFile } = await import("node:fs/promises");
    const seen = (await readFile(join(ws, "seen-dir"), "utf8")).trim();
    expect(seen.startsWith(ws)).toBe(false);
    expect(existsSync(seen)).toBe(false);
    expect((await readdir(ws)).sort()).toEqual(["answer.txt", "seen-dir"]);
  });

  it("fileEquals can compare with a hidden file", async () => {
    const ws = await makeWorkspace({ "out.csv": "a,b\n1,2\n" });
    const v = verifier({ checks: [normalizeCheck({ fileEquals: { path: "out.csv", hiddenFile: "expected/out.csv" } })] });
    const ok = await runVerifier(v, { reader: new DirectoryReader(ws), instruction: "x", hiddenFiles: [hidden("expected/out.csv", "a,b\r\n1,2\r\n")] });
    expect(ok.reward).toBe(1);
    const none = await runVerifier(v, { reader: new DirectoryReader(ws), instruction: "x" });
    expect(none).toMatchObject({ status: "error", error: { code: "HiddenFileUnavailable" } });
  });

  it("runs with a fixed environment: nothing from the caller, nothing from the workspace on PATH", async () => {
    process.env.REINS_TEST_LEAK = "caller-secret";
    const ws = await makeWorkspace({ "reins-planted-tool": "#!/bin/sh\necho '{\"reward\": 1}'\n" });
    await chmod(join(ws, "reins-planted-tool"), 0o755);
    const cmd = "env > env.txt; if command -v reins-planted-tool >/dev/null; then reins-planted-tool; else echo '{\"reward\": 0.1}'; fi";
    const r = await runVerifier(scriptVerifier(cmd), { reader: new DirectoryReader(ws), instruction: "x" });
    delete process.env.REINS_TEST_LEAK;
    expect(r.reward).toBe(0.1);
    const { readFile } = await import("node:fs/promises");
    const env = await readFile(join(ws, "env.txt"), "utf8");
    expect(env).not.toContain("caller-secret");
    expect(env).toContain(`REINS_WORKSPACE=${ws}`);
  });

  it("a crash is a verifier error with the exit status and stderr", async () => {
    const ws = await makeWorkspace({});
    const r = await runVerifier(scriptVerifier("echo 'Traceback: boom' >&2; exit 2"), { reader: new DirectoryReader(ws), instruction: "x" });
    expect(r).toMatchObject({ status: "error", reward: null, passed: false });
    expect(r.error).toEqual({ part: "script", code: "ScriptCrashed", message: "the verifier script exited with status 2 (Traceback: boom)" });
  });

  it("garbage output is a verifier error", async () => {
    const ws = await makeWorkspace({});
    const r = await runVerifier(scriptVerifier("head -c 200 /dev/urandom"), { reader: new DirectoryReader(ws), instruction: "x" });
    expect(r.error?.code).toBe("ScriptOutputInvalid");
  });

  it("a missing interpreter is a verifier error", async () => {
    const ws = await makeWorkspace({});
    const v = verifier({ script: { command: ["/no/such/interpreter", "x"], timeoutSeconds: 5 } });
    const r = await runVerifier(v, { reader: new DirectoryReader(ws), instruction: "x" });
    expect(r.error?.code).toBe("ScriptNotStarted");
  });

  it("a workspace without exec cannot run scripts and says so", async () => {
    const ws = await makeWorkspace({});
    const r = await runVerifier(scriptVerifier("true"), { reader: new DirectoryReader(ws, { exec: false }), instruction: "x" });
    expect(r.error?.code).toBe("ExecUnavailable");
  });

  it("script and checks combine", async () => {
    const ws = await makeWorkspace({ "a.txt": "x" });
    await writeFile(join(ws, "b.txt"), "y");
    const v = verifier({
      checks: [normalizeCheck({ fileExists: "a.txt" }), normalizeCheck({ fileExists: "c.txt" })],
      script: { command: ["sh", "-c", "echo '{\"reward\": 1}'"], timeoutSeconds: 10 },
      combine: { mode: "weighted", weights: { checks: 3, script: 1 } },
    });
    const r = await runVerifier(v, { reader: new DirectoryReader(ws), instruction: "x" });
    expect(r.reward).toBeCloseTo(0.75 * 0.5 + 0.25 * 1, 12);
    expect(r.passed).toBe(false);
  });
});
