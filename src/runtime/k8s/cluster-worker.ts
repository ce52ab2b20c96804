/**
 * The trainer worker of `trainer.worker: cluster`: the reference worker under torchrun in the Job's
 * rank 0 pod (trainer-job.ts), driven over the trainer protocol at rank 0's address.
 *
 * Files cross the cluster boundary over the API's exec, as tar streams through rank 0's pod,
 * which mounts the weights claim: the initial policy goes in once (`<runDir>/model`, written as
 * `model.part` and renamed, so the worker, waiting with --wait-for-model, never reads half of it;
 * a resumed run finds it there), and each published weights version comes out to this machine,
 * where `reins run`'s engine loads it. Checkpoints stay in the claim (`<runDir>/checkpoints/`),
 * which outlives the run for a resume. Effects only.
 */
import { spawn } from "node:child_process";
import { mkdirSync, renameSync, rmSync } from "node:fs";
import { posix } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { ReinsError } from "../../compiler/contract/problem.js";
import type { KubeClients } from "../sandbox/kubernetes/client.js";
import { startPodExec } from "../sandbox/kubernetes/pod-exec.js";
import { TrainerClient } from "../training/trainer-client.js";
import { TRAINER_PROTOCOL_VERSION } from "../training/trainer-protocol.js";
import { TRAINER_CONTAINER } from "./trainer-job.js";

export interface ClusterWorkerTarget {
  clients: KubeClients;
  namespace: string;
  /** Rank 0's pod and where its trainer-protocol port answers. */
  pod: string;
  url: string;
  /** The run's directory in the claim, as the pod mounts it (`<mountPath>/<runId>`). */
  runDir: string;
}

export class ClusterWorker {
  readonly client: TrainerClient;

  private constructor(private readonly t: ClusterWorkerTarget) {
    this.client = new TrainerClient(t.url);
  }

  /** Where the worker reads the initial policy and writes checkpoints (paths in the pod). */
  get modelDir(): string {
    return posix.join(this.t.runDir, "model");
  }

  get checkpointRoot(): string {
    return posix.join(this.t.runDir, "checkpoints");
  }

  /**
   * Stages `localModelDir` in the claim (unless an earlier run of this run id did), then waits
   * until rank 0 answers /health. A pod that fails first is reported with its exit code and last lines.
   */
  static async connect(
    t: ClusterWorkerTarget,
    localModelDir: string,
    o: { timeoutMs?: number; log?: (line: string) => void; signal?: AbortSignal } = {},
  ): Promise<ClusterWorker> {
    const w = new ClusterWorker(t);
    const staged = await w.exec(["test", "-f", posix.join(w.modelDir, "config.json")]);
    if (staged.code !== 0) {
      const tar = await localTar(localModelDir);
      const put = await w.exec(["sh", "-c", 'rm -rf "$1.part" && mkdir -p "$1.part" && tar -xf - -C "$1.part" && mv "$1.part" "$1"', "sh", w.modelDir], tar);
      if (put.code !== 0) throw failed(`could not stage the initial policy in ${w.modelDir} through pod ${t.pod}: ${put.stderr || `exit ${put.code}`}`);
      o.log?.(`trainer: staged the initial policy in the weights claim (${w.modelDir}, ${Math.round(tar.length / 1024)} KiB)`);
    }
    const deadline = Date.now() + (o.timeoutMs ?? 600_000);
    let last = "";
    while (Date.now() < deadline && !o.signal?.aborted) {
      try {
        const h = await w.client.health();
        if (h.protocolVersion !== TRAINER_PROTOCOL_VERSION)
          throw failed(`rank 0 speaks trainer protocol ${h.protocolVersion}, this reins ${TRAINER_PROTOCOL_VERSION}`);
        return w;
      } catch (e) {
        if (e instanceof ReinsError && e.code === "TrainerJobFailed") throw e;
        last = (e as Error).message;
      }
      const pod = (await t.clients.core.readNamespacedPod({ name: t.pod, namespace: t.namespace })) as V1Pod;
      const ended = pod.status?.containerStatuses?.[0]?.state?.terminated;
      if (pod.status?.phase === "Failed" || pod.status?.phase === "Succeeded" || ended) {
        throw failed(
          `rank 0's pod ${t.pod} ended (${pod.status?.phase}, exit ${ended?.exitCode ?? "?"}) before its worker answered${ended?.message ? `; its last lines:\n${ended.message.trim().split("\n").slice(-8).join("\n")}` : ""}`,
        );
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
    await w.client.close();
    throw failed(`rank 0's worker at ${t.url} did not answer within ${Math.round((o.timeoutMs ?? 600_000) / 1000)} s (${last})`);
  }

  /** Copies a weights directory of the claim (a save_weights result) to `localDir` on this machine. */
  async fetch(podDir: string, localDir: string): Promise<string> {
    const got = await this.exec(["tar", "-C", podDir, "-cf", "-", "."]);
    if (got.code !== 0) throw failed(`could not copy ${podDir} out of pod ${this.t.pod}: ${got.stderr || `exit ${got.code}`}`);
    const part = `${localDir}.part`;
    rmSync(part, { recursive: true, force: true });
    mkdirSync(part, { recursive: true });
    await localUntar(part, got.stdout);
    rmSync(localDir, { recursive: true, force: true });
    renameSync(part, localDir);
    return localDir;
  }

  /** Asks the worker to exit, then waits (up to `timeoutMs`) for torchrun to end and its pod to succeed. */
  async stop(timeoutMs = 30_000): Promise<void> {
    const asked = await this.client.shutdown().then(
      () => true,
      () => false,
    );
    await this.client.close();
    const deadline = Date.now() + timeoutMs;
    while (asked && Date.now() < deadline) {
      const pod = (await this.t.clients.core.readNamespacedPod({ name: this.t.pod, namespace: this.t.namespace }).catch(() => null)) as V1Pod | null;
      if (!pod || pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") return;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /**
   * One command in rank 0's pod. Its exit code travels as the last stderr line and the exec itself
   * exits 0: some exec servers (kwok's) turn another exit code into an error without the output.
   */
  private async exec(command: string[], stdin?: Uint8Array): Promise<{ code: number; stdout: Buffer; stderr: string }> {
    const out: Buffer[] = [];
    let stderr = "";
    const wrapped = ["sh", "-c", '"$@"; echo "reins-exit=$?" >&2', "sh", ...command];
    const run = startPodExec(
      { config: this.t.clients.config, namespace: this.t.namespace, pod: this.t.pod, container: TRAINER_CONTAINER },
      wrapped,
      stdin,
      (stream, chunk) => {
        if (stream === "stdout") out.push(chunk);
        else stderr += chunk.toString("utf8");
      },
    );
    const end = await run.done;
    run.close();
    if ("failure" in end) throw failed(`exec in pod ${this.t.pod} failed: ${end.failure}`);
    const m = /(?:^|\n)reins-exit=(\d+)\n?$/.exec(stderr);
    return { code: m ? Number(m[1]) : end.exitCode, stdout: Buffer.concat(out), stderr: (m ? stderr.slice(0, m.index) : stderr).trim() };
  }
}

function failed(message: string): ReinsError {
  return new ReinsError(
    "TrainerJobFailed",
    `The trainer's worker on the cluster: ${message}.`,
    "Look at rank 0's pod: `kubectl describe pod` and `kubectl logs` (on the test cluster, its output is in logs/pods/ of the cluster's directory); the image needs torchrun, torch and this reins's trainers/ package at the container's workingDir. A killed run resumes with `reins run --resume <run dir>`.",
  );
}

function localTar(dir: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn("tar", ["-C", dir, "-cf", "-", "."], { stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let err = "";
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => (err += d));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(failed(`tar of ${dir} failed: ${err.trim()}`))));
  });
}

function localUntar(dir: string, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("tar", ["-C", dir, "-xf", "-"], { stdio: ["pipe", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(failed(`untar into ${dir} failed: ${err.trim()}`))));
    child.stdin.end(data);
  });
}
