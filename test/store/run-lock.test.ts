/**
 * One process writes a run directory at a time: a second `reins` process that opens it (a second
 * --resume while the first runs) is refused with RunLocked naming the holder; a lock left by a
 * process that died (kill -9) is taken over, so --resume still works after a crash.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Plan } from "../../src/compiler/contract/plan.js";
import { isReinsError } from "../../src/compiler/contract/problem.js";
import { LOCK_FILE } from "../../src/runtime/store/run-lock.js";
import { RunStore } from "../../src/runtime/store/run-store.js";
import { tempDir } from "../temp.js";

const plan = { hash: "sha256:0123456789abcdef0123456789abcdef" } as Plan;

function refusal(open: () => unknown): { code: string; message: string } {
  try {
    open();
  } catch (err) {
    if (isReinsError(err)) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error("the run directory was opened twice");
}

describe("the run directory's lock", () => {
  it("refuses a second writer while the first holds it, and frees the directory on close", () => {
    const dir = join(tempDir("reins-lock-"), "run");
    const first = RunStore.open(dir, plan, { resume: false }).store!;
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true);
    expect(refusal(() => RunStore.open(dir, plan, { resume: true }))).toMatchObject({ code: "RunLocked", message: expect.stringContaining("this process") });
    first.close();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    const again = RunStore.open(dir, plan, { resume: true }).store!;
    again.close();
  });

  it("refuses a resume while another process writes the run, naming that process", async () => {
    const dir = join(tempDir("reins-lock-"), "run");
    RunStore.open(dir, plan, { resume: false }).store!.close();
    const holder = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        `
      import { RunStore } from ${JSON.stringify(join(process.cwd(), "src/runtime/store/run-store.ts"))};
      RunStore.open(${JSON.stringify(dir)}, { hash: ${JSON.stringify(plan.hash)} }, { resume: true });
      process.stdout.write("locked\\n");
      setTimeout(() => undefined, 60_000);
    `,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout!.on("data", (d: Buffer) => d.toString().includes("locked") && resolve());
        holder.on("exit", (code) => reject(new Error(`the holder exited (${code})`)));
      });
      const refused = refusal(() => RunStore.open(dir, plan, { resume: true }));
      expect(refused.code).toBe("RunLocked");
      expect(refused.message).toContain(`process ${holder.pid}`);
      // kill -9: the lock stays behind, names a dead process, and the next resume takes it over.
      holder.kill("SIGKILL");
      await new Promise((resolve) => holder.on("exit", resolve));
      expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8")).pid).toBe(holder.pid);
      const resumed = RunStore.open(dir, plan, { resume: true }).store!;
      expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8")).pid).toBe(process.pid);
      resumed.close();
    } finally {
      holder.kill("SIGKILL");
    }
  });

  it("takes over a lock whose pid now belongs to another process (a reused pid)", () => {
    const dir = join(tempDir("reins-lock-"), "run");
    RunStore.open(dir, plan, { resume: false }).store!.close();
    // A live pid (this very process) but another start time: not the holder any more.
    const lock = {
      pid: process.pid,
      started: 1,
      host: spawnSync("hostname", { encoding: "utf8" }).stdout.trim(),
      command: "run x",
      since: "2026-01-01T00:00:00Z",
    };
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify(lock));
    const store = RunStore.open(dir, plan, { resume: true }).store!;
    store.close();
  });
});
