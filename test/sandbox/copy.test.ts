/**
 * Copies out of a sandbox: the tar reader and the snapshot writer against archives made by the
 * real GNU and busybox tar (the image's), hostile archives included; and copyOut/copyIn of a real
 * local sandbox.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SnapshotWriter } from "../../src/runtime/sandbox/files/snapshot-writer.js";
import { TarReader } from "../../src/runtime/sandbox/files/tar-reader.js";
import type { LocalSandbox } from "../../src/runtime/sandbox/local/sandbox.js";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import type { CopyLimits } from "../../src/runtime/sandbox/provider.js";
import { DirectoryReader } from "../../src/runtime/verifiers/directory-reader.js";
import { freshDirs } from "./helpers.js";

const fresh = freshDirs("reins-copy");

/** Feeds an archive to a TarReader in small, odd-sized chunks (as a websocket delivers it). */
async function extract(archive: Buffer, limits: CopyLimits = {}) {
  const dir = fresh("out");
  const writer = new SnapshotWriter(dir, limits);
  const reader = new TarReader(writer);
  for (let at = 0; at < archive.length; at += 777) reader.push(archive.subarray(at, at + 777));
  await reader.end();
  return { dir, reader, report: writer.result() };
}

const longName = `${"d".repeat(90)}/${"e".repeat(90)}/${"f".repeat(120)}.txt`;
const binary = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) % 256));

/** A workspace with everything tar may carry. */
function sampleTree(): string {
  const src = fresh("src");
  mkdirSync(path.join(src, "a/b"), { recursive: true });
  mkdirSync(path.join(src, "empty"));
  mkdirSync(path.dirname(path.join(src, longName)), { recursive: true });
  writeFileSync(path.join(src, "a/b/c.txt"), "abc");
  writeFileSync(path.join(src, "bin.dat"), binary);
  writeFileSync(path.join(src, longName), "long");
  writeFileSync(path.join(src, "run.sh"), "#!/bin/sh\n");
  chmodSync(path.join(src, "run.sh"), 0o755);
  symlinkSync("a/b/c.txt", path.join(src, "rel-link"));
  symlinkSync("/etc/passwd", path.join(src, "abs-link"));
  linkSync(path.join(src, "a/b/c.txt"), path.join(src, "hard.txt"));
  execFileSync("mkfifo", [path.join(src, "pipe")]);
  return src;
}

function expectSameTree(dir: string): void {
  expect(readFileSync(path.join(dir, "a/b/c.txt"), "utf8")).toBe("abc");
  expect(readFileSync(path.join(dir, "hard.txt"), "utf8")).toBe("abc");
  expect(Buffer.compare(readFileSync(path.join(dir, "bin.dat")), binary)).toBe(0);
  expect(readFileSync(path.join(dir, longName), "utf8")).toBe("long");
  expect(statSync(path.join(dir, "run.sh")).mode & 0o777).toBe(0o755);
  expect(statSync(path.join(dir, "empty")).isDirectory()).toBe(true);
  expect(readlinkSync(path.join(dir, "rel-link"))).toBe("a/b/c.txt");
  expect(lstatSync(path.join(dir, "abs-link")).isSymbolicLink()).toBe(true);
  expect(readlinkSync(path.join(dir, "abs-link"))).toBe("/etc/passwd");
  expect(existsSync(path.join(dir, "pipe"))).toBe(false);
}

describe("tar reader", () => {
  it.each([
    ["GNU tar", ["tar", "--format=gnu"]],
    ["GNU tar, pax format", ["tar", "--format=pax"]],
    ["busybox tar (the image's)", ["busybox", "tar"]],
  ])("reads what %s writes: files, long names, links, modes; special files skipped", async (_name, tar) => {
    const src = sampleTree();
    const archive = execFileSync(tar[0], [...tar.slice(1), "-c", "-f", "-", "-C", src, "."], { maxBuffer: 64 * 1024 * 1024 });
    const { dir, reader, report } = await extract(archive);
    expect(reader.error).toBeUndefined();
    expect(reader.complete).toBe(true);
    expectSameTree(dir);
    expect(report.skipped.map((s) => s.path)).toEqual(expect.arrayContaining([expect.stringMatching(/pipe$/)]));
    expect(report.symlinks).toBe(2);
    expect(report.incomplete).toBeUndefined();
  });

  it("never writes outside its directory: .. and absolute names, and files behind a planted symlink", async () => {
    const outside = fresh("outside");
    const src = fresh("hostile");
    writeFileSync(path.join(src, "x"), "escaped");
    const dotdot = execFileSync("tar", ["-c", "-f", "-", "--transform", "s,^,../,", "-C", src, "x"], { stdio: ["ignore", "pipe", "ignore"] });
    const absolute = execFileSync("tar", ["-c", "-P", "-f", "-", path.join(outside, "..", path.basename(outside))], { stdio: ["ignore", "pipe", "ignore"] });
    // A symlink "d" to the outside directory, then a file "d/planted" in the same archive.
    const linkDir = fresh("link");
    symlinkSync(outside, path.join(linkDir, "d"));
    const fileDir = fresh("file");
    mkdirSync(path.join(fileDir, "d"));
    writeFileSync(path.join(fileDir, "d/planted"), "through the link");
    const archive = path.join(path.dirname(linkDir), "planted.tar");
    execFileSync("tar", ["-c", "-f", archive, "-C", linkDir, "d"]);
    execFileSync("tar", ["-r", "-f", archive, "-C", fileDir, "d/planted"]);
    for (const tar of [dotdot, absolute, readFileSync(archive)]) {
      const { dir, report } = await extract(tar);
      expect(report.skipped.length).toBeGreaterThan(0);
      expect(existsSync(path.join(dir, "..", "x"))).toBe(false);
    }
    expect(existsSync(path.join(outside, "planted"))).toBe(false);
    expect(existsSync(path.join(path.dirname(linkDir), "x"))).toBe(false);
  });

  it("keeps a large file's beginning and size, and stops at its entry limit", async () => {
    const src = fresh("big");
    const big = Buffer.alloc(3 * 1024 * 1024, 7);
    big.write("head", 0);
    writeFileSync(path.join(src, "big.bin"), big);
    for (let i = 0; i < 20; i++) writeFileSync(path.join(src, `f${i}`), String(i));
    const archive = execFileSync("tar", ["-c", "-f", "-", "-C", src, "."], { maxBuffer: 64 * 1024 * 1024 });
    const capped = await extract(archive, { maxFileBytes: 1024 * 1024 });
    const copy = readFileSync(path.join(capped.dir, "big.bin"));
    expect(copy.length).toBe(big.length);
    expect(copy.subarray(0, 1024 * 1024).equals(big.subarray(0, 1024 * 1024))).toBe(true);
    expect(copy.subarray(1024 * 1024).every((b) => b === 0)).toBe(true);
    expect(capped.report.truncated).toEqual(["big.bin"]);
    expect(capped.report.bytes).toBe(1024 * 1024 + 20 + 10);
    expect((await extract(archive, { maxEntries: 5 })).report.incomplete).toMatch(/more than 5 entries/);
  });

  it("refuses what is not a tar archive", async () => {
    const { reader } = await extract(Buffer.from("x".repeat(2048)));
    expect(reader.error).toMatch(/not a tar archive/);
    expect(reader.complete).toBe(false);
  });
});

describe("local sandbox copy in and out", () => {
  const provider = new LocalSandboxProvider({ rootDir: fresh("sandboxes") });
  afterAll(() => provider.close());

  it("copies the workspace out as the sandbox left it, links never followed", async () => {
    const box = await provider.create({ id: "copy-out", runId: "copy", network: "none" });
    const made = await box.exec([
      "sh",
      "-c",
      "mkdir -p out/deep empty && printf 42 > out/deep/answer.txt && ln -s /etc/passwd leak && ln -s out/deep/answer.txt ok && mkfifo pipe && printf x > /tmp/not-copied",
    ]);
    expect(made.exitCode).toBe(0);
    const dir = fresh("snapshot");
    const report = await box.copyOut(".", dir);
    expect(readFileSync(path.join(dir, "out/deep/answer.txt"), "utf8")).toBe("42");
    expect(readlinkSync(path.join(dir, "leak"))).toBe("/etc/passwd");
    expect(statSync(path.join(dir, "empty")).isDirectory()).toBe(true);
    expect(existsSync(path.join(dir, "pipe"))).toBe(false);
    expect(existsSync(path.join(dir, "not-copied"))).toBe(false);
    expect(report).toMatchObject({ files: 1, symlinks: 2, skipped: [{ path: "pipe", why: expect.any(String) }] });
    // The verifier's reader over the copy: the inside link is read, the outside one refused.
    const reader = new DirectoryReader(dir, { exec: false });
    expect((await reader.list()).files).toEqual(["ok", "out/deep/answer.txt"]);
    expect(await reader.readFile("leak", { maxBytes: 1000 })).toMatchObject({ kind: "outside" });
    await expect(box.copyOut("/etc", fresh("nope"))).rejects.toMatchObject({ kind: "exec-failed" });
    await box.destroy();
  });

  it("writes nothing of a workspace past a limit, and says which; one at the limits is copied whole", async () => {
    const box = await provider.create({ id: "copy-limits", runId: "copy", network: "none" });
    // 3 directories, 3 files, 1 link: 7 entries, 3 levels deep, the longest path (a/b/c, a/b/z) 5 characters.
    expect((await box.exec(["sh", "-c", "mkdir -p a/b/c && touch x a/y a/b/z && ln -s x l"])).exitCode).toBe(0);
    const cases: [CopyLimits, string | undefined][] = [
      [{ maxEntries: 6 }, "more than 6 entries"],
      [{ maxDepth: 2 }, "a path deeper than 2 directory levels"],
      [{ maxPathChars: 4 }, "a path longer than 4 characters"],
      [{ maxEntries: 7, maxDepth: 3, maxPathChars: 5 }, undefined],
    ];
    for (const [limits, why] of cases) {
      const dir = fresh("limited");
      const report = await box.copyOut(".", dir, limits);
      expect(report.incomplete).toBe(why);
      if (why) expect(readdirSync(dir)).toEqual([]);
      else expect(report).toMatchObject({ files: 3, directories: 3, symlinks: 1 });
    }
    await box.destroy();
  });

  it("copies a host directory in, modes kept, readable by the sandbox user only where it is put", async () => {
    const box = await provider.create({ id: "copy-in", runId: "copy", network: "none" });
    const src = fresh("hidden");
    mkdirSync(path.join(src, "sub"));
    writeFileSync(path.join(src, "sub/check.sh"), '#!/bin/sh\necho checked "$@"\n');
    chmodSync(path.join(src, "sub/check.sh"), 0o755);
    writeFileSync(path.join(src, "expected.txt"), "42");
    await box.copyIn(src, "/home/sandbox/.verify");
    const r = await box.exec(["sh", "-c", "~/.verify/sub/check.sh now; cat ~/.verify/expected.txt; stat -c %u ~/.verify/expected.txt"]);
    expect(r.stdout).toBe(`checked now\n42${(box as LocalSandbox).uid}\n`);
    expect(await box.listFiles()).toEqual([]);
    await box.destroy();
  });
});
