import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOOL_SCHEMAS, runTool } from "../../src/runtime/harness/reins-agent/tools.mjs";

describe("reins-agent workspace tools", () => {
  let root: string;
  let ws: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "reins-tools-"));
    ws = path.join(root, "ws");
    await mkdir(path.join(ws, "src"), { recursive: true });
    await writeFile(path.join(ws, "src/a.txt"), "alpha\n");
    await writeFile(path.join(root, "secret.txt"), "outside\n");
    await symlink(root, path.join(ws, "up"));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("declares the four tools with JSON Schema parameters", () => {
    expect(TOOL_SCHEMAS.map((t) => t.function.name)).toEqual(["read_file", "write_file", "list_files", "run_command"]);
    for (const t of TOOL_SCHEMAS) expect(t.function.parameters.type).toBe("object");
  });

  it("writes and reads files inside the workspace, creating directories", async () => {
    expect(await runTool(ws, "write_file", JSON.stringify({ path: "out/hello.txt", content: "hi" }))).toBe("wrote 2 bytes to out/hello.txt");
    expect(await readFile(path.join(ws, "out/hello.txt"), "utf8")).toBe("hi");
    expect(await runTool(ws, "read_file", '{"path": "src/a.txt"}')).toBe("alpha\n");
    expect(await runTool(ws, "read_file", JSON.stringify({ path: path.join(ws, "src/a.txt") }))).toBe("alpha\n");
  });

  it("refuses paths that leave the workspace, through .. , absolute paths or symlinks", async () => {
    for (const [tool, args] of [
      ["read_file", { path: "../secret.txt" }],
      ["read_file", { path: path.join(root, "secret.txt") }],
      ["read_file", { path: "up/secret.txt" }],
      ["write_file", { path: "up/new.txt", content: "x" }],
      ["write_file", { path: "../new.txt", content: "x" }],
      ["list_files", { path: ".." }],
    ] as const) {
      expect(await runTool(ws, tool, JSON.stringify(args)), `${tool} ${JSON.stringify(args)}`).toMatch(/^error: path .* is outside the workspace$/);
    }
    expect(existsSync(path.join(root, "new.txt"))).toBe(false);
  });

  it("lists files, recursively on request", async () => {
    expect(await runTool(ws, "list_files", "{}")).toBe(["out/", "src/", "up"].join("\n"));
    const all = await runTool(ws, "list_files", '{"recursive": true}');
    expect(all.split("\n")).toContain("src/a.txt");
  });

  it("runs commands in the workspace and reports their exit code", async () => {
    expect(await runTool(ws, "run_command", '{"command": "cat src/a.txt; exit 3"}')).toBe("exit code 3\nalpha\n");
  });

  it("kills a command that runs past its timeout", async () => {
    expect(await runTool(ws, "run_command", '{"command": "sleep 30", "timeout_seconds": 1}')).toMatch(/^timed out after 1 s/);
  });

  it("answers malformed calls with an error result instead of failing", async () => {
    expect(await runTool(ws, "write_file", '{"path": "x.txt", "content": "hi"')).toMatch(/^error: the arguments are not valid JSON/);
    expect(await runTool(ws, "write_file", "[1]")).toBe("error: the arguments must be a JSON object");
    expect(await runTool(ws, "write_file", '{"path": "x.txt"}')).toBe("error: content must be a string");
    expect(await runTool(ws, "delete_everything", "{}")).toMatch(/^error: unknown tool/);
    expect(await runTool(ws, "read_file", '{"path": "missing.txt"}')).toMatch(/^error: ENOENT/);
  });
});
