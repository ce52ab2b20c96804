import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { TrainerError } from "../../src/runtime/training/trainer-error.js";
import { TrainerWorker } from "../../src/runtime/training/trainer-process.js";
import { makeTinyModel, PYTHON, randomTrees, startWorker, treeBatch, type TinyModel } from "./helpers.js";
import { tempDir } from "../temp.js";

let model: TinyModel;

beforeAll(() => {
  model = makeTinyModel(3);
});

async function caught(p: Promise<unknown>): Promise<TrainerError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(TrainerError);
  return e as TrainerError;
}

describe("trainer worker lifecycle", () => {
  it("restores a checkpoint in a new process and reaches the identical next-step loss", async () => {
    const a = await startWorker(model);
    const batches = [11, 12, 13].map((s) => treeBatch(randomTrees(s, 3, model.vocabSize)));
    let ckpt: string;
    let nextLoss: number;
    let nextNorm: number;
    try {
      await a.client.forwardBackward(batches[0]);
      await a.client.optimStep();
      await a.client.forwardBackward(batches[1]);
      await a.client.optimStep();
      const c = await a.client.checkpoint();
      expect(c.step).toBe(2);
      ckpt = c.path;
      const m = await a.client.forwardBackward(batches[2]);
      nextLoss = m.loss;
      nextNorm = (await a.client.optimStep()).gradNorm;
      // A checkpoint with gradients pending is refused, not silently taken.
      await a.client.forwardBackward(batches[0]);
      expect((await caught(a.client.checkpoint())).workerCode).toBe("GradientsPending");
    } finally {
      await a.stop();
    }
    const b = await startWorker(model);
    try {
      const r = await b.client.restore(ckpt);
      expect(r.step).toBe(2);
      expect((await b.client.health()).step).toBe(2);
      const m = await b.client.forwardBackward(batches[2]);
      expect(m.loss).toBe(nextLoss);
      const s = await b.client.optimStep();
      expect(s.gradNorm).toBe(nextNorm);
      expect(s.step).toBe(3);
    } finally {
      await b.stop();
    }
  });

  it("reports a worker killed between calls, and one killed during a call, as TrainerDied", async () => {
    const w = await startWorker(model);
    w.process.kill("SIGKILL");
    await w.exited;
    const e = await caught(w.client.health());
    expect(e.code).toBe("TrainerDied");
    expect(e.message).toMatch(/exited on signal SIGKILL/);

    const w2 = await startWorker(model);
    const big = treeBatch(randomTrees(41, 60, model.vocabSize, { segments: 40 }));
    const pending = w2.client.forwardBackward(big);
    setTimeout(() => w2.process.kill("SIGKILL"), 50);
    const e2 = await caught(pending);
    expect(e2.code).toBe("TrainerDied");
    expect(e2.message).toMatch(/during forward_backward/);
    await w2.client.close();
  });

  it("explains a worker that cannot start", async () => {
    const empty = tempDir("reins-empty-");
    const e = await caught(TrainerWorker.start({ modelDir: empty, outDir: join(empty, "out"), python: PYTHON, startTimeoutMs: 60_000 }));
    expect(e.code).toBe("TrainerStartFailed");
    expect(e.message).toMatch(/has no config\.json/);

    const broken = join(empty, "broken");
    mkdirSync(broken);
    writeFileSync(join(broken, "config.json"), "{}");
    const e2 = await caught(TrainerWorker.start({ modelDir: broken, outDir: join(empty, "out2"), python: PYTHON }));
    expect(e2.code).toBe("TrainerStartFailed");

    const e3 = await caught(TrainerWorker.start({ modelDir: model.dir, outDir: join(empty, "out3"), python: "/nonexistent/python3" }));
    expect(e3.code).toBe("TrainerStartFailed");
    expect(e3.message).toMatch(/could not be started|ENOENT/);
  });
});
