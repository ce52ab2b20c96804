/**
 * What the trainer carries from SFT into RL: Adam's state (optim_step `resetState` starts it afresh,
 * as `reins run` does for the first RL step unless `sft.optimizerState: keep`), and the KL term's
 * reference (forward_backward `referenceCheckpoint`: the policy RL started from, not the weights the
 * worker started with before SFT).
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { trainerRoot, type TrainerWorker } from "../../src/runtime/training/trainer-process.js";
import type { TrainingBatch } from "../../src/runtime/trajectories/batch.js";
import { ALGORITHM, makeTinyModel, PYTHON, randomTrees, startWorker, treeBatch, type TinyModel } from "./helpers.js";

let model: TinyModel;
let worker: TrainerWorker;

beforeAll(async () => {
  model = makeTinyModel(11);
  worker = await startWorker(model, { learningRate: 1e-2 });
});

afterAll(async () => {
  await worker?.stop();
});

/** The optimizer's step count, the RMS of Adam's second moment and its betas in a checkpoint. */
function adamState(checkpoint: string): { step: number; rmsV: number; betas: number[] } {
  const script = [
    "import sys, json, torch",
    "from trainers.torch import checkpoint_io",
    "o = checkpoint_io.read(sys.argv[1])['optimizer']",
    "s = o['state']",
    "v = torch.cat([x['exp_avg_sq'].flatten() for x in s.values()])",
    "print(json.dumps({'step': int(max(float(x['step']) for x in s.values())), 'rmsV': float(v.mean().sqrt()), 'betas': list(o['param_groups'][0]['betas'])}))",
  ].join("\n");
  const env = { ...process.env, PYTHONPATH: trainerRoot(), PYTHONDONTWRITEBYTECODE: "1" };
  return JSON.parse(execFileSync(PYTHON, ["-c", script, checkpoint], { encoding: "utf8", cwd: trainerRoot(), env })) as {
    step: number;
    rmsV: number;
    betas: number[];
  };
}

describe("from SFT to RL in one worker", () => {
  it("starts Adam afresh when optim_step says resetState, and keeps it otherwise", async () => {
    const sft = treeBatch(randomTrees(21, 4, model.vocabSize));
    for (let i = 0; i < 3; i++) {
      await worker.client.forwardBackward(sft, { objective: "sft" });
      await worker.client.optimStep();
    }
    const afterSft = adamState((await worker.client.checkpoint()).path);
    expect(afterSft.step).toBe(3);
    const alg: TrainingBatch["algorithm"] = { ...ALGORITHM };
    const rl = treeBatch(randomTrees(22, 4, model.vocabSize), alg);
    await worker.client.forwardBackward(rl);
    await worker.client.optimStep();
    const kept = adamState((await worker.client.checkpoint()).path);
    expect(kept.step).toBe(4);
    await worker.client.forwardBackward(rl);
    await worker.client.optimStep({ resetState: true });
    const reset = adamState((await worker.client.checkpoint()).path);
    // One step of a fresh Adam: its count starts again and its second moment holds one step's gradient.
    expect(reset.step).toBe(1);
    expect(reset.rmsV).not.toBeCloseTo(kept.rmsV, 12);
    expect(reset.betas).toEqual([0.9, 0.999]);
  });

  it("takes Adam's betas per optimizer step (sft.adamBetas, the Algorithm's adamBetas), and refuses malformed ones", async () => {
    await worker.client.forwardBackward(treeBatch(randomTrees(24, 2, model.vocabSize)), { objective: "sft" });
    await expect(worker.client.optimStep({ betas: [0.9, 1.5] })).rejects.toMatchObject({ workerCode: "BadRequest" });
    await worker.client.optimStep({ betas: [0.8, 0.95] });
    expect(adamState((await worker.client.checkpoint()).path).betas).toEqual([0.8, 0.95]);
  });

  it("measures the KL term against the checkpoint it is given, else the worker's starting weights", async () => {
    const alg: TrainingBatch["algorithm"] = { ...ALGORITHM, klCoef: 0.1 };
    const batch = treeBatch(randomTrees(23, 3, model.vocabSize), alg);
    // The weights now (trained above) as a checkpoint: the reference RL would start from.
    const here = (await worker.client.checkpoint()).path;
    const toHere = await worker.client.forwardBackward(batch, { referenceCheckpoint: here });
    const toStart = await worker.client.forwardBackward(batch);
    expect(toHere.kl).toBeLessThan(1e-9);
    expect(toStart.kl).toBeGreaterThan(1e-4);
    await worker.client.optimStep();
    // The reference does not move with the policy: after a step the KL to the same checkpoint grows.
    const after = await worker.client.forwardBackward(batch, { referenceCheckpoint: here });
    expect(after.kl).toBeGreaterThan(1e-9);
    await worker.client.optimStep();
  });
});
