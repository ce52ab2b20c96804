/**
 * A reader that stops early (`reins render … | head -c 100`) closes reins's stdout mid-write: reins
 * stops quietly with exit 0, never "internal error (a bug): write EPIPE" and exit 70.
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { spawnReins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const REINS = resolve(import.meta.dirname, "../..");

/** A family of 2,000 tasks: its rendering is far larger than a pipe's buffer. */
function bigFamily(): string {
  const file = join(tempDir("reins-pipe-"), "family.yaml");
  writeFileSync(
    file,
    [
      "apiVersion: reins/v1alpha1",
      "kind: TaskFamily",
      "metadata: {name: many}",
      "spec:",
      "  parameters:",
      "    - {name: n, type: integer}",
      "  matrix:",
      `    n: [${Array.from({ length: 2000 }, (_, i) => i).join(", ")}]`,
      "  template:",
      "    instruction: Write the number {{n}} into answer.txt, and nothing else, then stop.",
      "    workspace:",
      "      files:",
      '        - {path: README.md, content: "Task {{n}}: write the number into answer.txt."}',
      "    verifier:",
      "      checks:",
      '        - fileEquals: {path: answer.txt, content: "number {{n}}"}',
      "",
    ].join("\n"),
  );
  return file;
}

function renderIntoClosedPipe(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawnReins(args, { cwd: REINS, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    // The first chunk arrives, then the reader goes away while reins still has most of it to write.
    child.stdout!.once("data", () => child.stdout!.destroy());
    child.on("error", fail);
    child.on("close", (code) => done({ code, stderr }));
  });
}

describe("a closed stdout", () => {
  it.each([
    ["render", ["render"]],
    ["render --json", ["render", "--json"]],
  ])(
    "%s stops quietly when the reader goes away",
    async (_name, args) => {
      const r = await renderIntoClosedPipe([...args, bigFamily()]);
      expect(r.stderr).not.toMatch(/internal error|EPIPE/);
      expect(r.code).toBe(0);
    },
    60_000,
  );
});
