/**
 * Typed calls of the trainer protocol. Network failures become TrainerErrors in plain words;
 * when the client knows the worker process (see trainer-process.ts) a dead worker is reported
 * as TrainerDied, also in the middle of a call.
 */
import { Agent, request } from "undici";
import type { TrainingBatch } from "../trajectories/batch.js";
import { TrainerError } from "./trainer-error.js";
import {
  TRAINER_PROTOCOL_VERSION,
  type BatchRef,
  type CheckpointResult,
  type ForwardBackwardMetrics,
  type ForwardBackwardOptions,
  type OptimStepResult,
  type SaveWeightsResult,
  type TrainerHealth,
} from "./trainer-protocol.js";

/** What the client knows about the process behind the URL (absent for a remote worker). */
export interface WorkerLiveness {
  /** Resolves with a description when the process exits. */
  exited: Promise<string>;
  /** The description, once exited. */
  exitDescription(): string | null;
}

interface WorkerErrorBody {
  error?: { code?: string; message?: string; hint?: string };
}

export class TrainerClient {
  private readonly agent = new Agent({ headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 });

  constructor(
    readonly baseUrl: string,
    private readonly liveness?: WorkerLiveness,
  ) {}

  health(): Promise<TrainerHealth> {
    return this.call<TrainerHealth>("GET", "/health", undefined, "health");
  }

  forwardBackward(batch: TrainingBatch | BatchRef, options: ForwardBackwardOptions = {}): Promise<ForwardBackwardMetrics> {
    const ref: BatchRef = "formatVersion" in batch ? { batch } : batch;
    return this.call("POST", "/forward_backward", { ...ref, ...options }, "forward_backward");
  }

  optimStep(options: { learningRate?: number; gradClip?: number; resetState?: boolean; betas?: [number, number] } = {}): Promise<OptimStepResult> {
    return this.call("POST", "/optim_step", options, "optim_step");
  }

  /**
   * Publish the weights. A worker started from a Hugging Face checkpoint writes its layout back (dtype,
   * shards + index, HF config; default format safetensors only); `maxShardBytes` splits the weights
   * into shards of at most that many bytes instead of the source's shards.
   */
  saveWeights(options: { formats?: ("onnx" | "safetensors")[]; maxShardBytes?: number } = {}): Promise<SaveWeightsResult> {
    return this.call("POST", "/save_weights", options, "save_weights");
  }

  checkpoint(path?: string): Promise<CheckpointResult> {
    return this.call("POST", "/checkpoint", path ? { path } : {}, "checkpoint");
  }

  restore(path: string): Promise<CheckpointResult> {
    return this.call("POST", "/restore", { path }, "restore");
  }

  /** Untempered logprob of each token given the previous ones (null for the first). */
  async computeLogprobs(sequences: number[][]): Promise<(number | null)[][]> {
    const r = await this.call<{ logprobs: (number | null)[][] }>("POST", "/compute_logprobs", { sequences }, "compute_logprobs");
    return r.logprobs;
  }

  /** Critic values per token of each row of a batch (PPO; the worker needs --value-head). */
  async computeValues(batch: TrainingBatch | BatchRef): Promise<number[][]> {
    const ref: BatchRef = "formatVersion" in batch ? { batch } : batch;
    const r = await this.call<{ values: number[][] }>("POST", "/compute_values", ref, "compute_values");
    return r.values;
  }

  async shutdown(): Promise<void> {
    await this.call("POST", "/shutdown", {}, "shutdown");
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private async call<T>(method: "GET" | "POST", path: string, body: unknown, what: string): Promise<T> {
    const dead = this.liveness?.exitDescription();
    if (dead) throw died(dead, what);
    const payload = body === undefined ? undefined : JSON.stringify({ protocolVersion: TRAINER_PROTOCOL_VERSION, ...(body as object) });
    const attempt = (async () => {
      const res = await request(this.baseUrl + path, {
        method,
        body: payload,
        headers: payload ? { "content-type": "application/json" } : {},
        dispatcher: this.agent,
      });
      const text = await res.body.text();
      return { status: res.statusCode, text };
    })();
    attempt.catch(() => undefined); // settled below or superseded by the exit
    let res: { status: number; text: string };
    try {
      if (this.liveness) {
        const exit = this.liveness.exited.then((d): never => {
          throw died(d, what);
        });
        exit.catch(() => undefined);
        res = await Promise.race([attempt, exit]);
      } else {
        res = await attempt;
      }
    } catch (e) {
      if (e instanceof TrainerError) throw e;
      const exit = this.liveness ? await settleExit(this.liveness, 1000) : null;
      if (exit) throw died(exit, what);
      throw new TrainerError(
        "TrainerUnreachable",
        `the trainer worker at ${this.baseUrl} did not answer ${what}: ${(e as Error).message}`,
        "check that the worker is running and listening on that port",
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.text);
    } catch {
      throw new TrainerError(
        "TrainerUnreachable",
        `the trainer worker answered ${what} with something that is not JSON (HTTP ${res.status})`,
        "is another program listening on the worker's port?",
      );
    }
    if (res.status !== 200) {
      const err = (parsed as WorkerErrorBody).error ?? {};
      const workerCode = err.code;
      if (workerCode === "ProtocolMismatch") throw new TrainerError("ProtocolMismatch", err.message ?? "protocol mismatch", err.hint ?? "");
      throw new TrainerError(
        "TrainerRefused",
        `the trainer refused ${what}: ${err.message ?? `HTTP ${res.status}`}`,
        err.hint ?? "see the worker's stderr",
        workerCode,
      );
    }
    const v = (parsed as { protocolVersion?: number }).protocolVersion;
    if (v !== undefined && v !== TRAINER_PROTOCOL_VERSION) {
      throw new TrainerError(
        "ProtocolMismatch",
        `the trainer worker speaks protocol ${v}, this client ${TRAINER_PROTOCOL_VERSION}`,
        "use a worker and client from the same reins version",
      );
    }
    return parsed as T;
  }
}

function died(description: string, what: string): TrainerError {
  return new TrainerError(
    "TrainerDied",
    `the trainer worker died during ${what}: ${description}`,
    "read the worker's last stderr lines above; after fixing the cause, resume from the last checkpoint",
  );
}

async function settleExit(l: WorkerLiveness, ms: number): Promise<string | null> {
  const now = l.exitDescription();
  if (now) return now;
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)));
  const out = await Promise.race([l.exited, t]);
  clearTimeout(timer);
  return out;
}
