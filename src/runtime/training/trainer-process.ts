/**
 * Starting and supervising the reference trainer worker (trainers/torch) as a child process:
 * `python -m trainers.torch.worker --port 0 …`, wait for its "listening" line and a healthy
 * /health, keep the last stderr lines, and report its death in plain words.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, type WriteStream } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { TrainerClient } from "./trainer-client.js";
import { TrainerError } from "./trainer-error.js";
import { TRAINER_PROTOCOL_VERSION } from "./trainer-protocol.js";

export interface TrainerWorkerOptions {
  modelDir: string;
  outDir: string;
  /** Python with torch (Debian's python3-torch lives in /usr/bin/python3). */
  python?: string;
  learningRate?: number;
  /** torch CPU threads; 0 = torch's default. */
  threads?: number;
  device?: "cpu" | "cuda" | "auto";
  microBatchTokens?: number;
  gradClip?: number;
  valueHead?: boolean;
  seed?: number;
  /** How long to wait for the worker to listen and answer /health. */
  startTimeoutMs?: number;
  /** Append the worker's stderr to this file. */
  stderrLog?: string;
  env?: Record<string, string>;
}

/** What the control loop needs of a worker: a local process (TrainerWorker) or one in a cluster's pod. */
export interface TrainerHandle {
  readonly client: TrainerClient;
  stop(): Promise<void>;
}

const STDERR_LINES = 40;

/** The repository root that holds trainers/torch (found from this file's location). */
export function trainerRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, "trainers", "torch", "worker.py"))) return dir;
    dir = dirname(dir);
  }
  throw new TrainerError(
    "TrainerStartFailed",
    `trainers/torch/worker.py was not found above ${fileURLToPath(import.meta.url)}.`,
    "Install reins with its trainers/ folder (a checkout, or the npm package, which ships it).",
  );
}

export class TrainerWorker implements TrainerHandle {
  readonly client: TrainerClient;
  private readonly tail: string[];
  readonly exited: Promise<string>;

  private constructor(
    readonly process: ChildProcess,
    readonly port: number,
    exited: Promise<string>,
    tail: string[],
    getExit: () => string | null,
  ) {
    this.exited = exited;
    this.tail = tail;
    this.client = new TrainerClient(`http://127.0.0.1:${port}`, { exited, exitDescription: getExit });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  /** The worker's last stderr lines. */
  stderrTail(): string {
    return this.tail.join("\n");
  }

  /** Ask the worker to shut down, then make sure the process is gone. */
  async stop(timeoutMs = 10_000): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      try {
        await this.client.shutdown();
      } catch {
        // already dying: fall through to the kill
      }
      const timer = setTimeout(() => this.process.kill("SIGKILL"), timeoutMs);
      await this.exited;
      clearTimeout(timer);
    }
    await this.client.close();
  }

  /** Kill the worker now (SIGKILL). */
  async kill(): Promise<void> {
    this.process.kill("SIGKILL");
    await this.exited;
    await this.client.close();
  }

  static async start(opts: TrainerWorkerOptions): Promise<TrainerWorker> {
    const root = trainerRoot();
    const python = opts.python ?? "/usr/bin/python3";
    const args = ["-m", "trainers.torch.worker", "--port", "0", "--model-dir", resolve(opts.modelDir), "--out-dir", resolve(opts.outDir)];
    if (opts.learningRate !== undefined) args.push("--lr", String(opts.learningRate));
    if (opts.threads !== undefined) args.push("--threads", String(opts.threads));
    if (opts.device) args.push("--device", opts.device);
    if (opts.microBatchTokens) args.push("--micro-batch-tokens", String(opts.microBatchTokens));
    if (opts.gradClip !== undefined) args.push("--grad-clip", String(opts.gradClip));
    if (opts.valueHead) args.push("--value-head");
    if (opts.seed !== undefined) args.push("--seed", String(opts.seed));
    const child = spawn(python, args, {
      cwd: root,
      env: {
        ...process.env,
        PYTHONPATH: root,
        PYTHONUNBUFFERED: "1",
        PYTHONDONTWRITEBYTECODE: "1",
        // BLAS threads follow torch's (OpenBLAS would otherwise start one thread per core).
        ...(opts.threads ? { OPENBLAS_NUM_THREADS: String(opts.threads), OMP_NUM_THREADS: String(opts.threads) } : {}),
        ...opts.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const tail: string[] = [];
    let log: WriteStream | undefined;
    if (opts.stderrLog) log = createWriteStream(opts.stderrLog, { flags: "a" });
    let partial = "";
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      log?.write(chunk);
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const l of lines) {
        tail.push(l);
        if (tail.length > STDERR_LINES) tail.shift();
      }
    });
    let exitText: string | null = null;
    const exited = new Promise<string>((res) => {
      const finish = (desc: string) => {
        if (partial) {
          tail.push(partial);
          partial = "";
        }
        const last = tail.slice(-8).join("\n").trim();
        exitText = `${desc}${last ? `; its last stderr lines:\n${last}` : " (no stderr output)"}`;
        log?.end();
        res(exitText);
      };
      child.on("exit", (code, signal) => finish(`the worker process (pid ${child.pid}) exited ${signal ? `on signal ${signal}` : `with code ${code}`}`));
      child.on("error", (e) => finish(`the worker process could not be started with ${python}: ${e.message}`));
    });
    const port = await waitForPort(child, exited, opts.startTimeoutMs ?? 120_000, python);
    const worker = new TrainerWorker(child, port, exited, tail, () => exitText);
    try {
      const h = await worker.client.health();
      if (h.protocolVersion !== TRAINER_PROTOCOL_VERSION) {
        throw new TrainerError(
          "ProtocolMismatch",
          `the worker speaks protocol ${h.protocolVersion}, this client ${TRAINER_PROTOCOL_VERSION}`,
          "use matching versions",
        );
      }
    } catch (e) {
      child.kill("SIGKILL");
      throw e;
    }
    return worker;
  }
}

function waitForPort(child: ChildProcess, exited: Promise<string>, timeoutMs: number, python: string): Promise<number> {
  return new Promise<number>((resolvePort, reject) => {
    let buf = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new TrainerError(
          "TrainerStartFailed",
          `the trainer worker did not start listening within ${Math.round(timeoutMs / 1000)} s`,
          "the machine may be overloaded; try a longer start timeout",
        ),
      );
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      buf += chunk.toString("utf8");
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      const line = buf.slice(0, nl);
      try {
        const msg = JSON.parse(line) as { event?: string; port?: number };
        if (msg.event === "listening" && typeof msg.port === "number") {
          clearTimeout(timer);
          child.stdout!.off("data", onData);
          child.stdout!.resume();
          resolvePort(msg.port);
        }
      } catch {
        buf = buf.slice(nl + 1);
      }
    };
    child.stdout!.on("data", onData);
    exited.then((desc) => {
      clearTimeout(timer);
      reject(
        new TrainerError(
          "TrainerStartFailed",
          `the trainer worker did not start: ${desc}`,
          `it needs ${python} with torch and onnx (apt-get install python3-torch python3-onnx) and a model directory made by trainers.torch.init_model`,
        ),
      );
    });
  });
}
