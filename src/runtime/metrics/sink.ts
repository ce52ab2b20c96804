/**
 * The metric sinks of an Experiment (`spec.metrics`): a Python child process
 * (trainers/metrics/sink.py) that logs each step's scalars to TensorBoard event files
 * (tensorboardX, in <run dir>/tensorboard) and/or a W&B run in offline mode (<run dir>/wandb,
 * nothing sent). It runs from the metrics Python environment (scripts/install-metrics-python.sh;
 * REINS_METRICS_PYTHON names another interpreter). metrics.jsonl stays the source of truth: a sink
 * that cannot start stops the run before anything is sampled (MetricsSinkUnavailable), one that
 * dies later is a warning and the run goes on.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import type { MetricsSinks } from "../../compiler/contract/plan.js";
import { ReinsError } from "../../compiler/contract/problem.js";
import { trainerRoot } from "../training/trainer-process.js";
import type { Scalars } from "./names.js";

const START_TIMEOUT_MS = 180_000;
const CLOSE_TIMEOUT_MS = 120_000;

/** The interpreter of the metrics sinks. */
export function metricsPython(env: Record<string, string | undefined> = process.env): string {
  return env.REINS_METRICS_PYTHON || join(homedir(), ".cache", "reins", "metrics-python", "bin", "python");
}

/** Where a run's sinks write: <run dir>/tensorboard and <run dir>/wandb (the W&B SDK's own layout: wandb/offline-run-*). */
export function sinkDirs(runDir: string): { tensorboard: string; wandb: string } {
  return { tensorboard: join(runDir, "tensorboard"), wandb: join(runDir, "wandb") };
}

export class MetricSinks {
  private failed = false;
  private readonly stderr: string[] = [];

  private constructor(
    private readonly child: ChildProcess,
    private readonly exited: Promise<number | null>,
    private readonly warn: (line: string) => void,
  ) {
    child.stderr?.on("data", (d: Buffer) => {
      this.stderr.push(...d.toString("utf8").split("\n").filter(Boolean));
      this.stderr.splice(0, Math.max(0, this.stderr.length - 20));
    });
  }

  /** The sinks the plan asks for, started and ready; null when it asks for none. */
  static async open(sinks: MetricsSinks | undefined, runDir: string, warn: (line: string) => void): Promise<MetricSinks | null> {
    if (!sinks || (!sinks.tensorboard && !sinks.wandb)) return null;
    const python = metricsPython();
    const what = [sinks.tensorboard ? "TensorBoard" : "", sinks.wandb ? "W&B" : ""].filter(Boolean).join(" and ");
    if (!existsSync(python)) throw new ReinsError("MetricsSinkUnavailable", `spec.metrics asks for ${what}, but the metrics Python ${python} does not exist.`);
    const dirs = sinkDirs(runDir);
    const args = ["-m", "trainers.metrics.sink"];
    if (sinks.tensorboard) args.push("--tensorboard", dirs.tensorboard);
    if (sinks.wandb)
      args.push("--wandb-dir", dirname(dirs.wandb), "--wandb-project", sinks.wandb.project, "--wandb-name", basename(runDir), "--wandb-id", wandbId(runDir));
    const child = spawn(python, args, { cwd: trainerRoot(), stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" } });
    const exited = new Promise<number | null>((resolve) => {
      child.on("error", () => resolve(-1));
      child.on("exit", (code) => resolve(code));
    });
    const sink = new MetricSinks(child, exited, warn);
    child.stdin?.on("error", () => undefined); // a dead sink is reported by write/close
    const first = await Promise.race([
      firstLine(child),
      exited.then(() => null),
      new Promise<"timeout">((resolve) => setTimeout(resolve, START_TIMEOUT_MS, "timeout").unref()),
    ]);
    if (first && first !== "timeout" && first.ready) return sink;
    child.kill("SIGKILL");
    await exited;
    const reason =
      first === "timeout"
        ? `did not start within ${START_TIMEOUT_MS / 1000} s`
        : first?.error === "missing"
          ? `has no ${String(first.module)} package`
          : `exited before it was ready: ${sink.stderr.slice(-3).join(" | ") || "no output"}`;
    throw new ReinsError("MetricsSinkUnavailable", `spec.metrics asks for ${what}, but the metrics Python ${python} ${reason}.`);
  }

  /** Log `scalars` at global step `step`. */
  write(step: number, scalars: Scalars): void {
    if (this.failed) return;
    if (this.child.exitCode !== null || this.child.stdin?.destroyed) return this.fail("it exited");
    this.child.stdin?.write(`${JSON.stringify({ step, scalars, wallTime: Date.now() / 1000 })}\n`);
  }

  /** Flush and close the writers; waits for the process. */
  async close(): Promise<void> {
    this.child.stdin?.end();
    const code = await Promise.race([this.exited, new Promise<"timeout">((resolve) => setTimeout(resolve, CLOSE_TIMEOUT_MS, "timeout").unref())]);
    if (code === "timeout") {
      this.child.kill("SIGKILL");
      await this.exited;
      return this.fail(`it did not finish within ${CLOSE_TIMEOUT_MS / 1000} s`);
    }
    if (code !== 0) this.fail(`it exited with code ${code}`);
  }

  private fail(why: string): void {
    if (this.failed) return;
    this.failed = true;
    this.warn(`the metric sinks stopped (${why}${this.stderr.length > 0 ? `: ${this.stderr.slice(-3).join(" | ")}` : ""}); metrics.jsonl has every step.`);
  }
}

function firstLine(child: ChildProcess): Promise<{ ready?: boolean; error?: string; module?: string } | null> {
  return new Promise((resolve) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => {
      try {
        resolve(JSON.parse(line));
      } catch {
        resolve(null);
      }
    });
    lines.once("close", () => resolve(null));
  });
}

/** The W&B run id of a run directory: the same on resume, so the steps continue one run. */
function wandbId(runDir: string): string {
  return createHash("sha256").update(realpathSync(runDir)).digest("hex").slice(0, 12);
}
