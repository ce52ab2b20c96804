/** Temporary workspaces for verifier tests. */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll } from "vitest";
import type { ResolvedCheck, ResolvedVerifier } from "../../src/compiler/contract/plan.js";
import { normalizeCheck } from "../../src/compiler/resolve/verifier.js";
import { CheckContext } from "../../src/runtime/verifiers/checks/context.js";
import { DirectoryReader } from "../../src/runtime/verifiers/directory-reader.js";
import { runChecks, type CheckResult } from "../../src/runtime/verifiers/run-checks.js";

const made: string[] = [];
afterAll(async () => {
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});

export async function makeWorkspace(files: Record<string, string | Uint8Array>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "reins-ws-test-"));
  made.push(dir);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  return dir;
}

/** Runs one user-written check (single-key object) on a directory. */
export async function check(dir: string, userCheck: Record<string, unknown>): Promise<CheckResult> {
  const part = await runChecks([normalizeCheck(userCheck)], new CheckContext(new DirectoryReader(dir)));
  return part.results[0];
}

export function verifier(partial: Partial<ResolvedVerifier> & { checks?: ResolvedCheck[] }): ResolvedVerifier {
  return { name: "inline", checks: [], combine: { mode: "weighted", weights: {} }, passThreshold: 1, ...partial };
}
