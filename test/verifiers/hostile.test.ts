/** Hostile workspaces: every case gives a bounded, explained result. */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { symlink, truncate, writeFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { normalizeCheck } from "../../src/compiler/resolve/verifier.js";
import { DirectoryReader } from "../../src/runtime/verifiers/directory-reader.js";
import { mayBacktrackBadly } from "../../src/runtime/verifiers/safe-regex.js";
import { gatherRubricFiles, DEFAULT_RUBRIC_LIMITS } from "../../src/runtime/verifiers/rubric.js";
import { runVerifier } from "../../src/runtime/verifiers/verify.js";
import { check, makeWorkspace, verifier } from "./fixture.js";

describe("symlinks", () => {
  it("are not followed outside the workspace, and are followed inside it", async () => {
    const outside = await makeWorkspace({ "secret.txt": "top secret 42\n", "dir/x.json": "{}" });
    const ws = await makeWorkspace({ "real.txt": "inside\n" });
    await symlink(join(outside, "secret.txt"), join(ws, "leak.txt"));
    await symlink(join(outside, "dir"), join(ws, "leakdir"));
    await symlink("real.txt", join(ws, "alias.txt"));
    await symlink("../../../../../../etc/passwd", join(ws, "passwd"));

    const r = await check(ws, { fileContains: { path: "leak.txt", text: "secret" } });
    expect(r.pass).toBe(false);
    expect(r.reason).toBe(`leak.txt is a symlink leading outside the workspace (${join(outside, "secret.txt")}); it was not followed.`);
    expect((await check(ws, { fileExists: "leak.txt" })).reason).toMatch(/leading outside the workspace/);
    expect((await check(ws, { jsonValid: "leakdir/x.json" })).reason).toMatch(/leading outside the workspace/);
    expect((await check(ws, { fileContains: { path: "passwd", text: "root" } })).reason).toMatch(/passwd is a symlink leading outside/);
    expect((await check(ws, { fileEquals: { path: "alias.txt", content: "inside" } })).pass).toBe(true);

    const listing = await new DirectoryReader(ws).list();
    expect(listing.files).toEqual(["alias.txt", "real.txt"]);
    expect(listing.skipped.map((s) => s.path).sort()).toEqual(["leak.txt", "leakdir", "passwd"]);
    const judged = await gatherRubricFiles(new DirectoryReader(ws), [], DEFAULT_RUBRIC_LIMITS);
    expect(judged.files.map((f) => f.path)).toEqual(["alias.txt", "real.txt"]);
  });

  it("a symlink loop is reported, not followed forever", async () => {
    const ws = await makeWorkspace({});
    await symlink("b", join(ws, "a"));
    await symlink("a", join(ws, "b"));
    expect((await check(ws, { fileExists: "a" })).pass).toBe(false);
    expect((await check(ws, { jsonValid: "a" })).reason).toBe("a could not be read: symlink loop.");
    expect((await new DirectoryReader(ws).list()).skipped.length).toBe(2);
  });
});

describe("huge and strange files", () => {
  it("a 2 GiB file is refused with its size, and shown to the judge only as a prefix", async () => {
    const ws = await makeWorkspace({ "big.json": "" });
    await truncate(join(ws, "big.json"), 2 * 1024 ** 3);
    const r = await check(ws, { jsonValid: "big.json" });
    expect(r.reason).toBe("big.json is too large to check (2.0 GiB; the limit is 16 MiB).");
    expect((await check(ws, { fileExists: "big.json" })).pass).toBe(true);
    const judged = await gatherRubricFiles(new DirectoryReader(ws), ["*.json"], DEFAULT_RUBRIC_LIMITS);
    expect(judged.files[0]).toMatchObject({ path: "big.json", note: "binary file, 2.0 GiB, not shown" });
  });

  it("binary garbage where JSON is expected gets a clear reason", async () => {
    const garbage = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256);
    const ws = await makeWorkspace({ "out.json": garbage, "latin1.json": Buffer.from([0x7b, 0xe9, 0x7d]) });
    expect((await check(ws, { jsonValid: "out.json" })).reason).toMatch(/^out\.json is binary, not text \(a NUL byte at offset \d+\)\.$/);
    expect((await check(ws, { jsonPath: { path: "latin1.json", query: "$.a", equals: 1 } })).reason).toBe("latin1.json is not valid UTF-8 text.");
  });

  it("a FIFO does not block a read", async () => {
    const ws = await makeWorkspace({});
    execFileSync("mkfifo", [join(ws, "pipe.json")]);
    expect((await check(ws, { jsonValid: "pipe.json" })).reason).toBe("pipe.json is a special file, not a regular file.");
  });

  it("a YAML alias bomb is invalid YAML, not an out-of-memory", async () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 12; i++)
      lines.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(",")}]`,
      );
    const ws = await makeWorkspace({ "bomb.yaml": `${lines.join("\n")}\n` });
    const r = await check(ws, { yamlPath: { path: "bomb.yaml", query: "$.l[0][0]", equals: 1 } });
    expect(r.pass).toBe(false);
    expect(r.reason).toMatch(/^bomb\.yaml is not valid YAML: .*alias/i);
  });

  it("deeply nested JSON is handled", async () => {
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    const ws = await makeWorkspace({ "deep.json": deep });
    const r = await check(ws, { jsonPath: { path: "deep.json", query: "$[0][0]", equals: [] } });
    expect(typeof r.reason).toBe("string");
    expect(r.pass).toBe(false);
  });

  it("a quadratic regex on a large crafted file times out into a failure", async () => {
    const ws = await makeWorkspace({ "big.txt": "a".repeat(200_000) });
    const r = await check(ws, { fileMatches: { path: "big.txt", pattern: "a*a*a*b" } });
    expect(r.reason).toBe("matching /a*a*a*b/ against big.txt took too long; the file was not accepted.");
  });

  it("patterns that can backtrack badly are recognized (they always run under a deadline)", () => {
    for (const p of ["^(a+)+$", "(a|aa)*b", "(\\w+\\s?)*$", "a*a*b", "\\s+\\d+\\s+", "(x)\\1", "a{2,}b+"]) expect(mayBacktrackBadly(p), p).toBe(true);
    for (const p of ["^Total: \\d+$", "^- Fixed .*median$", "[*+]+x", "\\(a+\\)", "^#{1,3} Title"]) expect(mayBacktrackBadly(p), p).toBe(false);
  });

  it("a catastrophic regex on crafted content times out into a failure", async () => {
    const ws = await makeWorkspace({ "a.txt": `${"a".repeat(64)}!` });
    const r = await check(ws, { fileMatches: { path: "a.txt", pattern: "^(a+)+$" } });
    expect(r).toMatchObject({ pass: false, reason: "matching /^(a+)+$/ against a.txt took too long; the file was not accepted." });
  });
});

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

describe("scripts that misbehave", () => {
  it("a script that forks, daemonizes and hangs is killed with its whole tree: a timeout error", async () => {
    const ws = await makeWorkspace({});
    const script = [
      "sleep 300 & echo $! >> pids",
      "setsid sleep 300 & echo $! >> pids",
      "(setsid sh -c 'echo $$ >> pids; exec sleep 300' &)",
      "sh -c 'trap \"\" TERM HUP; echo $$ >> pids; while true; do sleep 1; done' &",
      "echo $$ >> pids",
      "sleep 300",
    ].join("\n");
    const v = verifier({ script: { command: ["sh", "-c", script], timeoutSeconds: 1 } });
    const result = await runVerifier(v, { reader: new DirectoryReader(ws), instruction: "x" });
    expect(result.status).toBe("error");
    expect(result.reward).toBeNull();
    expect(result.error).toMatchObject({ part: "script", code: "ScriptTimeout" });
    expect(result.error?.message).toBe("the verifier script ran longer than 1 s; it and every process it started were killed");
    const pids = (await readFile(join(ws, "pids"), "utf8")).trim().split("\n").map(Number);
    expect(pids.length).toBe(5);
    // Killing is synchronous with SIGKILL, but reaping by init may lag a moment.
    for (let i = 0; i < 50 && pids.some(alive); i++) await new Promise((r) => setTimeout(r, 20));
    expect(pids.filter(alive)).toEqual([]);
  });

  it("a script that floods stdout is bounded and its final reward still counts", async () => {
    const ws = await makeWorkspace({});
    const v = verifier({ script: { command: ["sh", "-c", "head -c 30000000 /dev/zero | tr '\\0' 'x'; echo; echo '{\"reward\": 0.25}'"], timeoutSeconds: 60 } });
    const result = await runVerifier(v, { reader: new DirectoryReader(ws), instruction: "x" });
    expect(result).toMatchObject({ status: "ok", reward: 0.25 });
  });

  it("a check command that leaves a background process behind does not hang the verifier, and the process dies", async () => {
    const ws = await makeWorkspace({});
    const r = await check(ws, { commandExitsZero: "sleep 300 & echo $! > bg.pid" });
    expect(r.pass).toBe(true);
    const pid = Number((await readFile(join(ws, "bg.pid"), "utf8")).trim());
    for (let i = 0; i < 50 && alive(pid); i++) await new Promise((res) => setTimeout(res, 20));
    expect(alive(pid)).toBe(false);
  });

  it("the verifier sees exactly the workspace it was given", async () => {
    const ws = await makeWorkspace({ "x.txt": "1" });
    await writeFile(join(ws, "y.txt"), "2");
    const part = await runVerifier(verifier({ checks: [normalizeCheck({ fileCount: { glob: "*", equals: 2 } })] }), {
      reader: new DirectoryReader(ws),
      instruction: "x",
    });
    expect(part.reward).toBe(1);
  });
});
