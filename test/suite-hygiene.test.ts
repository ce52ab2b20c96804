/**
 * The suite's leftover check (test/suite-hygiene.ts) finds what a test left running even when it
 * carries no marker in its environment, as a sandbox's bwrap and forwarder do: by the suite's
 * TMPDIR in its command line or working directory, with everything it started. Processes that
 * point into another directory (another suite's) are not counted.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { suiteProcesses } from "./suite-hygiene.js";
import { tempDir } from "./temp.js";

const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) if (child.pid) process.kill(-child.pid, "SIGKILL");
});

/** A process group of its own, with an empty environment unless one is given (like a sandbox's bwrap). */
function start(argv: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): number {
  const child = spawn(argv[0], argv.slice(1), { cwd: opts.cwd ?? "/", env: opts.env ?? {}, stdio: "ignore", detached: true });
  started.push(child);
  return child.pid as number;
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

describe("the suite's leftover check", () => {
  it("finds processes that point into the suite's TMPDIR and what they started, and no others", async () => {
    const root = tempDir("reins-hygiene-");
    const other = tempDir("reins-hygiene-other-");
    // Like a leaked keeper: its arguments name a state file under the TMPDIR; its child does not.
    const keeper = start(["/bin/sh", "-c", "sleep 600 & wait", "keeper", "--ro-bind", path.join(root, "state", "passwd"), "/etc/passwd"]);
    const inRoot = start(["/bin/sleep", "601"], { cwd: root });
    const marked = start(["/bin/sleep", "602"], { env: { REINS_TEST_SUITE: "hygiene-test-marker" } });
    const elsewhere = start(["/bin/sh", "-c", "sleep 603 & wait", "keeper", "--bind", path.join(other, "state"), "/workspace"]);
    let forwarder: number | undefined;
    for (let i = 0; i < 200 && forwarder === undefined; i++) {
      forwarder = childrenOf(keeper)[0];
      if (forwarder === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    expect(forwarder).toBeDefined();

    const found = suiteProcesses("REINS_TEST_SUITE=hygiene-test-marker", [root]).map((p) => p.pid);
    expect(found.sort()).toEqual([keeper, forwarder as number, inRoot, marked].sort());
    expect(found).not.toContain(elsewhere);
    expect(suiteProcesses("REINS_TEST_SUITE=hygiene-test-marker", [root]).find((p) => p.pid === keeper)?.command).toContain(path.join(root, "state", "passwd"));
  });
});
