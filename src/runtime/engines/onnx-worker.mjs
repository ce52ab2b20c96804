// A generating thread of the onnx engine (./onnx.ts): a SamplerHost (./onnx-sampler.ts, loaded
// through tsx) with its own onnxruntime session, answering the engine's messages ({id, t}, and
// {id, t: "abort"}) with {id, t: "chunk" | "ok" | "err"}. Plain JavaScript so that it starts
// without the TypeScript loader registered in this thread.
import { parentPort, workerData } from "node:worker_threads";
import { tsImport } from "tsx/esm/api";

const { SamplerHost } = await tsImport("./onnx-sampler.ts", { parentURL: import.meta.url, tsconfig: false });
const host = new SamplerHost(workerData.spec);

parentPort.on("message", (m) => {
  if (m.t === "abort") return host.abort(m.id);
  const onChunk = (c) => parentPort.postMessage({ id: m.id, t: "chunk", ids: c.ids, logprobs: c.logprobs });
  host.answer(m.id, m, onChunk).then(
    (value) => parentPort.postMessage({ id: m.id, t: "ok", value }),
    (e) => parentPort.postMessage({ id: m.id, t: "err", message: e?.message ?? String(e), kind: e?.kind ?? "failed" }),
  );
});
