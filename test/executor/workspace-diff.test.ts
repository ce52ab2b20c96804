/**
 * A try's workspace diff, the task's files → the snapshot the verifier read: what changed, as
 * unified patches for text, never a link's target's content, and within its byte budgets.
 */
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ResolvedTask } from "../../src/compiler/contract/plan.js";
import { diffWorkspace, PATCH_FILE_BYTES, PATCH_TOTAL_BYTES, readWorkspaceDiff, taskEntries } from "../../src/runtime/executor/workspace-diff.js";
import { tempDir } from "../temp.js";

const files = (list: [string, string][]): ResolvedTask["files"] =>
  list.map(([path, content]) => ({ path, content, encoding: "utf8", mode: 0o644 }) as ResolvedTask["files"][number]);

describe("the workspace diff of a try", () => {
  it("lists added, modified and deleted files with unified patches, and counts the unchanged", async () => {
    const dir = tempDir("reins-diff-");
    const ws = join(dir, "workspace");
    mkdirSync(join(ws, "src"), { recursive: true });
    writeFileSync(join(ws, "keep.txt"), "same\n");
    writeFileSync(join(ws, "src", "app.py"), "def f():\n    return 2\n");
    writeFileSync(join(ws, "answer.txt"), "42\n");
    const task = {
      files: files([
        ["keep.txt", "same\n"],
        ["src/app.py", "def f():\n    return 1\n"],
        ["notes.md", "todo\n"],
      ]),
    } as ResolvedTask;
    const diff = await readWorkspaceDiff(task, ws, "/workspace");
    expect(diff).toMatchObject({ added: 1, modified: 1, deleted: 1, unchanged: 1 });
    expect(diff.files.map((f) => [f.path, f.status, f.kind])).toEqual([
      ["answer.txt", "added", "text"],
      ["notes.md", "deleted", "text"],
      ["src/app.py", "modified", "text"],
    ]);
    const app = diff.files.find((f) => f.path === "src/app.py")!;
    expect(app.patch).toContain("--- a/src/app.py");
    expect(app.patch).toMatch(/^- {4}return 1$/m);
    expect(app.patch).toMatch(/^\+ {4}return 2$/m);
    expect(diff.files.find((f) => f.path === "answer.txt")!.patch).toContain("--- /dev/null");
  });

  it("reports a link by its text and never reads what it points to", async () => {
    const dir = tempDir("reins-diff-");
    const ws = join(dir, "workspace");
    mkdirSync(ws);
    const secret = join(dir, "secret.txt");
    writeFileSync(secret, "host secret\n");
    symlinkSync(secret, join(ws, "leak.txt"));
    symlinkSync("/proc/self/environ", join(ws, "env"));
    const diff = await readWorkspaceDiff({ files: files([]) } as unknown as ResolvedTask, ws, "/workspace");
    expect(diff.files.map((f) => [f.path, f.kind])).toEqual([
      ["env", "symlink"],
      ["leak.txt", "symlink"],
    ]);
    expect(JSON.stringify(diff)).not.toContain("host secret");
    expect(diff.files.find((f) => f.path === "leak.txt")!.target).toBe(secret);
    // A link into /proc never reached the verifier, and the diff says so.
    expect(diff.files.find((f) => f.path === "env")).toMatchObject({ target: "/proc/self/environ", omitted: expect.stringMatching(/did not get/) });
  });

  it("gives binary and oversized files no patch, and says why", () => {
    const before = taskEntries([
      { path: "img.bin", content: Buffer.from([0, 1, 2, 3]).toString("base64"), encoding: "base64", mode: 0o644 },
    ] as ResolvedTask["files"]);
    const big = "x".repeat(PATCH_FILE_BYTES + 1);
    const after = taskEntries([
      { path: "img.bin", content: Buffer.from([0, 1, 2, 4]).toString("base64"), encoding: "base64", mode: 0o644 },
      { path: "big.txt", content: big, encoding: "utf8", mode: 0o644 },
    ] as ResolvedTask["files"]);
    const diff = diffWorkspace(before, after);
    expect(diff.files.map((f) => [f.path, f.status, f.kind, f.omitted])).toEqual([
      ["big.txt", "added", "binary", `larger than ${PATCH_FILE_BYTES / 1024} KiB`],
      ["img.bin", "modified", "binary", "not text"],
    ]);
    expect(diff.files.every((f) => f.patch === undefined)).toBe(true);
  });

  it("stops making patches past the try's budget, and marks the rest", () => {
    // An agent that rewrites many files cannot make the run directory grow without bound.
    const line = `${"y".repeat(200)}\n`;
    const n = Math.ceil(PATCH_TOTAL_BYTES / (line.length * 100)) + 5;
    const after = taskEntries(files(Array.from({ length: n }, (_, i) => [`f${String(i).padStart(4, "0")}.txt`, line.repeat(100)])));
    const diff = diffWorkspace([], after);
    const patched = diff.files.filter((f) => f.patch !== undefined);
    expect(patched.length).toBeGreaterThan(0);
    expect(patched.length).toBeLessThan(n);
    expect(patched.reduce((s, f) => s + Buffer.byteLength(f.patch!), 0)).toBeLessThan(PATCH_TOTAL_BYTES + line.length * 110);
    expect(diff.files.filter((f) => f.patch === undefined).every((f) => /passed/.test(f.omitted ?? ""))).toBe(true);
  });
});
