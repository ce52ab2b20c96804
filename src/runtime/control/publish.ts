/**
 * Publishing a trained step (or the end of SFT): save the weights in the Trainer's formats →
 * the engine hot-reloads them → checkpoint the trainer. The checkpoint event that follows is the
 * step's commit: the caller records it (`commit`) once everything else of the step is on disk, so
 * a run killed in between redoes the step on resume instead of counting it done without its
 * records. Weights the engine cannot load stop the run (EngineReloadFailed) while the previous
 * version keeps serving; nothing is checkpointed for that step, so a resumed run redoes it.
 */
import { join } from "node:path";
import type { OnnxEngine } from "../engines/onnx.js";
import type { RunStore } from "../store/run-store.js";
import type { TrainerHandle } from "../training/trainer-process.js";
import { LoopError } from "./loop-error.js";
import type { CheckpointEvent } from "./state.js";
import { setAsideUnloadable } from "./unloadable.js";

export interface PublisherOptions {
  worker: TrainerHandle;
  engine: Pick<OnnxEngine, "reload">;
  store: RunStore;
  /** Where checkpoints go (local-trainer.ts). */
  checkpointRoot: string;
  weightsFormat: ("onnx" | "safetensors")[];
  /**
   * A worker in a cluster's pod writes its weights in the claim: this copies a saved version to
   * this machine, where the engine loads it, and returns the local directory.
   */
  fetchWeights?: (dir: string, version: string) => Promise<string>;
  /** What serves now: the initial policy, or the last checkpoint's weights on resume. */
  serving: { version: string; weightsDir: string; checkpoint?: string; phase?: CheckpointEvent["phase"] };
  /** SFT's checkpoint, when SFT ran before a resume. */
  sftCheckpoint?: string;
}

export class Publisher {
  version: string;
  weightsDir: string;
  lastCheckpoint: string | undefined;
  /** Whose checkpoint the trainer's state is: SFT's until the first RL step is published (then the optimizer's moments are SFT's). */
  lastPhase: CheckpointEvent["phase"] | undefined;
  /** SFT's checkpoint (the policy RL starts from): the KL term's reference. */
  sftCheckpoint: string | undefined;
  /** Every version that served in this process, in order. */
  readonly versions: string[];

  constructor(private readonly o: PublisherOptions) {
    this.version = o.serving.version;
    this.weightsDir = o.serving.weightsDir;
    this.lastCheckpoint = o.serving.checkpoint;
    this.lastPhase = o.serving.phase;
    this.sftCheckpoint = o.sftCheckpoint;
    this.versions = [this.version];
  }

  /** Publish the trainer's current weights; returns the checkpoint event, not yet recorded. */
  async publish(phase: CheckpointEvent["phase"], step: number): Promise<CheckpointEvent> {
    const { worker, engine, store } = this.o;
    const remote = await worker.client.saveWeights({ formats: this.o.weightsFormat });
    const saved = this.o.fetchWeights ? { ...remote, dir: await this.o.fetchWeights(remote.dir, remote.version) } : remote;
    try {
      await engine.reload(saved.version, saved.dir);
    } catch (err) {
      const aside = setAsideUnloadable(saved.dir, store.dir);
      throw new LoopError(
        "EngineReloadFailed",
        `The engine could not load the new weights ${saved.version}: ${(err as Error).message.replace(/\.$/, "")}. The previous weights ${this.version} keep serving; nothing was checkpointed for this ${phase === "sft" ? "SFT" : "step"}.`,
        `${aside ? `The unloadable directory was moved to ${aside}, so a resumed run exports the weights again. ` : ""}Fix the cause first (a full disk? a damaged file?).`,
      );
    }
    const ckpt = await worker.client.checkpoint(join(this.o.checkpointRoot, `${phase}-${step}`));
    this.version = saved.version;
    this.weightsDir = saved.dir;
    this.versions.push(saved.version);
    this.lastCheckpoint = ckpt.path;
    this.lastPhase = phase;
    if (phase === "sft") this.sftCheckpoint = ckpt.path;
    return { type: "checkpoint", phase, step, path: ckpt.path, version: saved.version, weightsDir: saved.dir };
  }

  /** Record a published checkpoint: from here on a resumed run counts its step (or SFT) as done. */
  commit(ev: CheckpointEvent): void {
    this.o.store.event({ ...ev });
  }
}
