/**
 * The tar reader and writer on archives made block by block: the header fields and extensions
 * real tar writes rarely (base-256 sizes, GNU long names, pax records), and the hostile ones an
 * agent may craft (oversized extended headers and names, bad sizes, truncation); and the copy
 * out over exec, end to end, with an exec that replays an archive.
 */
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, readFileSync, readlinkSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { type ExecFn, execTransport } from "../../src/runtime/sandbox/files/exec-transport.js";
import { SnapshotWriter } from "../../src/runtime/sandbox/files/snapshot-writer.js";
import { MAX_NAME_BYTES, TarReader } from "../../src/runtime/sandbox/files/tar-reader.js";
import { buildTar } from "../../src/runtime/sandbox/files/tar-writer.js";
import { freshDirs } from "./helpers.js";

const fresh = freshDirs("reins-tar");

const BLOCK = 512;
const END = Buffer.alloc(2 * BLOCK);

interface Fields {
  name: string;
  /** The typeflag character; "0" when absent. */
  type?: string;
  /** A number (written in octal) or the raw 12 bytes of the field. */
  size?: number | Buffer;
  mode?: number;
  linkname?: string;
  /** "ustar" (POSIX), "gnu" ("ustar  ") or "v7" (no magic). */
  magic?: "ustar" | "gnu" | "v7";
}

/** One header block, its checksum right. */
function header(f: Fields): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(f.name, 0, 100, "utf8");
  h.write(`${(f.mode ?? 0o644).toString(8).padStart(7, "0")}\0`, 100, "ascii");
  h.write("0000000\0", 108, "ascii");
  h.write("0000000\0", 116, "ascii");
  if (Buffer.isBuffer(f.size)) f.size.copy(h, 124);
  else h.write(`${(f.size ?? 0).toString(8).padStart(11, "0")}\0`, 124, "ascii");
  h.write("00000000000\0", 136, "ascii");
  h.write(f.type ?? "0", 156, "ascii");
  if (f.linkname) h.write(f.linkname, 157, 100, "utf8");
  const magic = f.magic ?? "ustar";
  if (magic === "ustar") h.write("ustar\x0000", 257, "binary");
  if (magic === "gnu") h.write("ustar  \0", 257, "binary");
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
  return h;
}

/** Data padded to whole blocks. */
function data(content: Buffer | string): Buffer {
  const b = Buffer.from(content);
  return Buffer.concat([b, Buffer.alloc((BLOCK - (b.length % BLOCK)) % BLOCK)]);
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body);
  while (String(length).length + Buffer.byteLength(body) !== length) length = String(length).length + Buffer.byteLength(body);
  return `${length}${body}`;
}

/** A header of type `type` ("x" or "L") carrying `content`, then the entry's own header. */
function extended(type: "x" | "L" | "K", content: string, entry: Fields): Buffer {
  const body = Buffer.from(type === "x" ? content : `${content}\0`);
  return Buffer.concat([
    header({ name: type === "x" ? "PaxHeader" : "././@LongLink", type, size: body.length, magic: type === "x" ? "ustar" : "gnu" }),
    data(body),
    header(entry),
  ]);
}

async function read(archive: Buffer, chunk = 777) {
  const dir = fresh("out");
  const writer = new SnapshotWriter(dir);
  const reader = new TarReader(writer);
  for (let at = 0; at < archive.length; at += chunk) reader.push(archive.subarray(at, at + chunk));
  await reader.end();
  return { dir, reader, report: writer.result() };
}

describe("tar reader, archives made block by block", () => {
  it("reads a base-256 size field (GNU, for files past 8 GiB)", async () => {
    const size = Buffer.alloc(12);
    size[0] = 0x80;
    size[11] = 5;
    const { dir, reader } = await read(Buffer.concat([header({ name: "big.txt", size }), data("hello"), END]));
    expect(reader.error).toBeUndefined();
    expect(reader.complete).toBe(true);
    expect(readFileSync(path.join(dir, "big.txt"), "utf8")).toBe("hello");
  });

  it("refuses a negative base-256 size", async () => {
    const size = Buffer.alloc(12, 0xff);
    const { reader } = await read(Buffer.concat([header({ name: "neg.txt", size }), END]));
    expect(reader.error).toMatch(/not a tar archive \(an entry with an invalid size\)/);
    expect(reader.complete).toBe(false);
  });

  it("reads GNU long names and long link texts", async () => {
    const name = `${"a".repeat(150)}/${"b".repeat(150)}.txt`;
    const target = `../${"t".repeat(200)}`;
    const archive = Buffer.concat([
      extended("L", name, { name: name.slice(0, 100), size: 4, magic: "gnu" }),
      data("long"),
      extended("K", target, { name: "link", type: "2", magic: "gnu" }),
      END,
    ]);
    const { dir, reader } = await read(archive);
    expect(reader.error).toBeUndefined();
    expect(reader.complete).toBe(true);
    expect(readFileSync(path.join(dir, name), "utf8")).toBe("long");
    expect(readlinkSync(path.join(dir, "link"))).toBe(target);
  });

  it("reads pax paths, link paths and sizes", async () => {
    const name = `${"p".repeat(200)}/${"r".repeat(200)}/x.txt`;
    const target = `/${"q".repeat(300)}`;
    const archive = Buffer.concat([
      extended("x", paxRecord("path", name) + paxRecord("size", "3"), { name: "short", size: 0 }),
      data("abc"),
      extended("x", paxRecord("linkpath", target), { name: "sym", type: "2" }),
      END,
    ]);
    const { dir, reader } = await read(archive);
    expect(reader.error).toBeUndefined();
    expect(reader.complete).toBe(true);
    expect(readFileSync(path.join(dir, name), "utf8")).toBe("abc");
    expect(existsSync(path.join(dir, "short"))).toBe(false);
    expect(readlinkSync(path.join(dir, "sym"))).toBe(target);
  });

  it("reads pre-POSIX (v7) headers", async () => {
    const archive = Buffer.concat([header({ name: "old.txt", size: 3, magic: "v7" }), data("old"), END]);
    const { dir, reader } = await read(archive);
    expect(reader.error).toBeUndefined();
    expect(readFileSync(path.join(dir, "old.txt"), "utf8")).toBe("old");
  });

  it("refuses a huge pax header at once, without reading it into memory", async () => {
    const archive = Buffer.concat([header({ name: "PaxHeader", type: "x", size: 1024 * 1024 * 1024 }), Buffer.alloc(8 * 1024 * 1024, 0x41)]);
    const { reader, report } = await read(archive, 64 * 1024);
    expect(reader.error).toBe("not a tar archive (an extended header larger than 4 MiB)");
    expect(reader.complete).toBe(false);
    expect(report.files).toBe(0);
  });

  it("refuses a name longer than MAX_NAME_BYTES (a pax path below tar-stream's own cap)", async () => {
    const name = "n".repeat(MAX_NAME_BYTES + 1);
    const { reader, report } = await read(Buffer.concat([extended("x", paxRecord("path", name), { name: "x" }), END]), 64 * 1024);
    expect(reader.error).toMatch(/a name or link text longer than 1048576 bytes/);
    expect(reader.complete).toBe(false);
    expect(report.skipped).toEqual([]);
  });

  it("keeps a skipped entry's name in the report cut to 4096 characters (a 1,000-entry report stays small)", async () => {
    const long = `${"f".repeat(600_000)}`;
    const { reader, report } = await read(Buffer.concat([extended("x", paxRecord("path", long), { name: "fifo", type: "6" }), END]));
    expect(reader.error).toBeUndefined();
    expect(report.skipped).toEqual([{ path: `${"f".repeat(4096)}…`, why: expect.any(String) }]);
  });

  it("skips devices, fifos and unknown types, their data included, and reads on", async () => {
    const archive = Buffer.concat([
      header({ name: "fifo", type: "6" }),
      header({ name: "chr", type: "3" }),
      header({ name: "sparse", type: "S", size: 600 }),
      data(Buffer.alloc(600, 1)),
      header({ name: "after.txt", size: 2 }),
      data("ok"),
      END,
    ]);
    const { dir, reader, report } = await read(archive);
    expect(reader.error).toBeUndefined();
    expect(reader.complete).toBe(true);
    expect(report.skipped.map((s) => s.path)).toEqual(["fifo", "chr", "sparse"]);
    expect(readFileSync(path.join(dir, "after.txt"), "utf8")).toBe("ok");
  });

  it("does not wait forever on a directory whose size field is not 0", async () => {
    const archive = Buffer.concat([header({ name: "d/", type: "5", size: 1024, mode: 0o750 }), header({ name: "d/f", size: 1 }), data("f"), END]);
    const { dir, reader } = await read(archive);
    expect(reader.error).toBeUndefined();
    expect(reader.complete).toBe(true);
    expect(statSync(path.join(dir, "d")).mode & 0o777).toBe(0o750);
    expect(readFileSync(path.join(dir, "d/f"), "utf8")).toBe("f");
  });

  it("keeps hard links inside the copy", async () => {
    const archive = Buffer.concat([
      header({ name: "a.txt", size: 1 }),
      data("a"),
      header({ name: "b.txt", type: "1", linkname: "a.txt" }),
      header({ name: "c.txt", type: "1", linkname: "../../etc/passwd" }),
      END,
    ]);
    const { dir, report } = await read(archive);
    expect(readFileSync(path.join(dir, "b.txt"), "utf8")).toBe("a");
    expect(existsSync(path.join(dir, "c.txt"))).toBe(false);
    expect(report.skipped).toEqual([{ path: "c.txt", why: "hard link to a file outside the copy" }]);
  });

  it("is not complete when the archive stops inside an entry or before its end blocks", async () => {
    const whole = Buffer.concat([header({ name: "a.txt", size: 1000 }), data(Buffer.alloc(1000, 7)), header({ name: "b.txt", size: 1 }), data("b"), END]);
    expect((await read(whole)).reader.complete).toBe(true);
    for (const cut of [700, 2 * BLOCK + BLOCK / 2, 5 * BLOCK, 5 * BLOCK + 100]) {
      const { reader } = await read(whole.subarray(0, cut));
      expect(reader.error).toBeUndefined();
      expect(reader.complete).toBe(false);
    }
    // A pax header with no entry after it is no end either.
    const dangling = Buffer.concat([header({ name: "PaxHeader", type: "x", size: 12 }), data(paxRecord("path", "x"))]);
    expect((await read(dangling)).reader.complete).toBe(false);
  });
});

describe("tar writer and reader together", () => {
  it("reads back what the writer wrote: modes, long paths and link texts, binary content", async () => {
    const longName = `${"d".repeat(90)}/${"e".repeat(90)}/${"f".repeat(120)}.txt`;
    const longTarget = `../${"t".repeat(150)}/x`;
    const binary = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 31) % 256));
    const archive = await buildTar([
      { path: "w", type: "dir", mode: 0o750 },
      { path: "w/bin.dat", type: "file", mode: 0o755, content: binary },
      { path: `w/${longName}`, type: "file", mode: 0o600, content: Buffer.from("long") },
      { path: "w/empty", type: "file", mode: 0o644 },
      { path: "w/long", type: "symlink", mode: 0o777, linkTarget: longTarget },
      { path: "w/ünï", type: "symlink", mode: 0o777, linkTarget: "ç" },
    ]);
    expect(archive.length % BLOCK).toBe(0);
    const { dir, reader, report } = await read(archive);
    expect(reader.error).toBeUndefined();
    expect(reader.complete).toBe(true);
    expect(statSync(path.join(dir, "w")).mode & 0o777).toBe(0o750);
    expect(readFileSync(path.join(dir, "w/bin.dat")).equals(binary)).toBe(true);
    expect(statSync(path.join(dir, "w/bin.dat")).mode & 0o777).toBe(0o755);
    expect(readFileSync(path.join(dir, "w", longName), "utf8")).toBe("long");
    expect(readFileSync(path.join(dir, "w/empty"), "utf8")).toBe("");
    expect(readlinkSync(path.join(dir, "w/long"))).toBe(longTarget);
    expect(lstatSync(path.join(dir, "w/ünï")).isSymbolicLink()).toBe(true);
    expect(report).toMatchObject({ files: 3, directories: 3, symlinks: 2, skipped: [] });
  });

  it("writes what the image's busybox tar extracts: long paths and link texts in pax records", async () => {
    const longName = `${"d".repeat(90)}/${"e".repeat(90)}/${"f".repeat(120)}.txt`;
    const longTarget = `../${"t".repeat(150)}/x`;
    const archive = await buildTar([
      { path: "w", type: "dir", mode: 0o750 },
      { path: `w/${longName}`, type: "file", mode: 0o640, content: Buffer.from("long") },
      { path: "w/long", type: "symlink", mode: 0o777, linkTarget: longTarget },
      { path: "w/ü.txt", type: "file", mode: 0o600, content: Buffer.from("u") },
    ]);
    const out = fresh("busybox");
    execFileSync("busybox", ["tar", "-x", "-f", "-", "-C", out], { input: archive });
    expect(readFileSync(path.join(out, "w", longName), "utf8")).toBe("long");
    expect(statSync(path.join(out, "w", longName)).mode & 0o777).toBe(0o640);
    expect(readlinkSync(path.join(out, "w/long"))).toBe(longTarget);
    expect(statSync(path.join(out, "w")).mode & 0o777).toBe(0o750);
    expect(readFileSync(path.join(out, "w/ü.txt"), "utf8")).toBe("u");
  });
});

describe("copy out over exec", () => {
  /** An exec that plays `archive` on stdout in chunks, then exits with `exitCode`. */
  const replay =
    (archive: Buffer, exitCode = 0): ExecFn =>
    async (_argv, options) => {
      for (let at = 0; at < archive.length; at += 1000) options?.onOutput?.("stdout", archive.subarray(at, at + 1000));
      return {
        exitCode,
        signal: null,
        stdout: "",
        stderr: exitCode === 0 ? "" : "tar: something failed",
        stdoutTruncated: false,
        stderrTruncated: false,
        timedOut: false,
        durationMs: 1,
      };
    };
  const at = { root: "/workspace", rel: "", abs: "/workspace" };
  const archive = Buffer.concat([header({ name: "./", type: "5", mode: 0o755 }), header({ name: "./a.txt", size: 1 }), data("a"), END]);

  it("copies a whole archive, and reports tar's failure as a skip", async () => {
    const into = new SnapshotWriter(fresh("exec"));
    await execTransport(replay(archive)).copyOut(at, into, 10_000);
    expect(readFileSync(path.join(into.root, "a.txt"), "utf8")).toBe("a");
    const failed = new SnapshotWriter(fresh("exec"));
    await execTransport(replay(archive, 2)).copyOut(at, failed, 10_000);
    expect(failed.result().skipped).toEqual([{ path: ".", why: "tar: tar: something failed" }]);
  });

  it("fails clearly on a truncated archive and on one that is not tar", async () => {
    await expect(execTransport(replay(archive.subarray(0, 2 * BLOCK + 10), 1)).copyOut(at, new SnapshotWriter(fresh("exec")), 10_000)).rejects.toThrow(
      "copying /workspace out: the archive ended early (tar: something failed)",
    );
    await expect(execTransport(replay(Buffer.from("x".repeat(4096)))).copyOut(at, new SnapshotWriter(fresh("exec")), 10_000)).rejects.toThrow(
      "copying /workspace out: not a tar archive (bad header checksum)",
    );
    const huge = Buffer.concat([header({ name: "PaxHeader", type: "x", size: 64 * 1024 * 1024 }), Buffer.alloc(1024 * 1024)]);
    await expect(execTransport(replay(huge)).copyOut(at, new SnapshotWriter(fresh("exec")), 10_000)).rejects.toThrow(/an extended header larger than 4 MiB/);
  });
});
