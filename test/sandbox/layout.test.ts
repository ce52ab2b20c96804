/**
 * Where the sandbox code may reach: sandbox/ is a leaf of the runtime (it imports only the
 * compiler's plan types besides itself), so k8s/ (plan manifests, trainer Job, the worker in the
 * Job's pod) and the verifiers build on it and never the other way round.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const runtime = path.resolve(import.meta.dirname, "../../src/runtime");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => path.join(e.parentPath, e.name));
}

/** Runtime folders (relative to src/runtime) that the files under `dir` import from. */
function importedFolders(dir: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const file of sources(path.join(runtime, dir))) {
    for (const m of readFileSync(file, "utf8").matchAll(/^(?:import|export)[^;]*?from\s+"(\.[^"]+)"/gms)) {
      const target = path.relative(runtime, path.resolve(path.dirname(file), m[1]));
      const folder = target.split(path.sep)[0];
      out.set(folder, [...(out.get(folder) ?? []), path.relative(runtime, file)]);
    }
  }
  return out;
}

describe("sandbox layering", () => {
  it("sandbox/ imports nothing of the runtime but itself (no cycle with k8s/ or the verifiers)", () => {
    const folders = importedFolders("sandbox");
    expect([...folders.keys()].filter((f) => f !== "sandbox" && f !== "..")).toEqual([]);
    expect(folders.get("sandbox")?.length).toBeGreaterThan(10);
  });

  it("k8s/ builds on sandbox/kubernetes (and training's client, to drive a worker in a pod), and the verifiers never reach the executor or a provider", () => {
    expect([...importedFolders("k8s").keys()].sort()).toEqual(["..", "k8s", "sandbox", "training"]);
    expect([...importedFolders("training").keys()]).not.toContain("k8s");
    const verifiers = readFileSyncAll("verifiers");
    expect(verifiers).not.toMatch(/from "\.\.\/(executor|k8s)\//);
    expect(verifiers).not.toMatch(/sandbox\/(local|podman|kubernetes)\//);
  });
});

function readFileSyncAll(dir: string): string {
  return sources(path.join(runtime, dir))
    .map((f) => readFileSync(f, "utf8"))
    .join("\n");
}
