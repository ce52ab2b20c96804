// A generating thread of the onnx engine (./onnx.ts): an OnnxSampler (./onnx-sampler.ts, loaded
// through tsx) with its own onnxruntime session, answering the engine's messages —
// {id, t: "ready" | "generate" | "abort" | "stats" | "prepare" | "commit" | "discard" | "close"} —
// with {id, t: "chunk" | "ok" | "err"}. Plain JavaScript so that it starts without the TypeScript
// loader registered in this thread.
import { parentPort, workerData } from "node:worker_threads";
import { tsImport } from "tsx/esm/api";

const { OnnxSampler } = await tsImport("./onnx-sampler.ts", { parentURL: import.meta.url, tsconfig: false });
const sampler = new OnnxSampler(workerData.spec);
/** Abort controllers of the generations under way, by message id. */
const running = new Map();

const ok = (id, value) => parentPort.postMessage({ id, t: "ok", value });
const err = (id, e) => parentPort.postMessage({ id, t: "err", message: e?.message ?? String(e), kind: e?.kind ?? "failed" });

async function generate(id, req) {
  const controller = new AbortController();
  running.set(id, controller);
  try {
    const onChunk = (c) => parentPort.postMessage({ id, t: "chunk", ids: c.ids, logprobs: c.logprobs });
    ok(id, await sampler.generateStream({ ...req, signal: controller.signal }, onChunk));
  } finally {
    running.delete(id);
  }
}

parentPort.on("message", (m) => {
  const answer = async () => {
    switch (m.t) {
      case "ready":
        return ok(m.id, await sampler.ready());
      case "generate":
        return generate(m.id, m.req);
      case "abort":
        return running.get(m.id)?.abort();
      case "stats":
        return ok(m.id, await sampler.prefixCacheStats());
      case "prepare":
        return ok(m.id, await sampler.prepare(m.version, m.path));
      case "commit":
        return ok(m.id, await sampler.commit());
      case "discard":
        return ok(m.id, await sampler.discard());
      case "close":
        return ok(m.id, await sampler.close());
      default:
        throw new Error(`bug: unknown message ${m.t}`);
    }
  };
  answer().catch((e) => err(m.id, e));
});
