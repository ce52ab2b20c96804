/**
 * The trainer worker dies with the process that started it, however that process dies: a
 * `reins run` killed with SIGKILL leaves no Python worker behind.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../temp.js";
import { makeTinyModel } from "./helpers.js";

const ROOT = resolve(import.meta.dirname, "../..");

/** "alive", "zombie" (dead, not yet reaped by whoever inherited it) or "gone". */
function stateOf(pid: number): "alive" | "zombie" | "gone" {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8")) ? "zombie" : "alive";
  } catch {
    return "gone";
  }
}

describe("trainer worker", () => {
  it("exits when its parent is killed with SIGKILL", async () => {
    const model = makeTinyModel(3);
    const out = tempDir("reins-worker-parent-");
    // A parent like `reins run`: starts the worker through the runtime, prints its pid, waits.
    const script = `
      import { TrainerWorker } from "./src/runtime/training/trainer-process.ts";
      const w = await TrainerWorker.start({ modelDir: ${JSON.stringify(model.dir)}, outDir: ${JSON.stringify(out)}, threads: 1 });
      console.log(w.pid);
      setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
    const workerPid = await new Promise<number>((res, rej) => {
      parent.stdout.setEncoding("utf8").once("data", (d: string) => res(Number(d.trim())));
      parent.once("exit", (code) => rej(new Error(`the parent exited (${code}) before the worker started`)));
    });
    expect(stateOf(workerPid)).toBe("alive");

    parent.kill("SIGKILL");
    await new Promise((res) => parent.once("exit", res));
    const deadline = Date.now() + 5_000;
    while (stateOf(workerPid) === "alive" && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
    expect(stateOf(workerPid)).not.toBe("alive");
  }, 120_000);
});
