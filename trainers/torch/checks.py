"""Numerical self-checks used by the test suite and gpu_check (JSON in on stdin, JSON out on stdout).

  {"op": "correction", "cases": [{trainLogprobs, rolloutLogprobs, lossMask, sequence?, correction}]}
      → {"weights": [[...], ...]}: this worker's correction weights (0 where lossMask is 0)
  {"op": "tree-vs-paths", "modelDir": D, "cases": [{"tree": TrainingBatch, "paths": TrainingBatch}]}
      → per case: both losses and the largest gradient difference between the two layouts
  {"op": "prefix-sharing", "modelDir": D, "cases": [TrainingBatch, ...]}
      → per case: losses, largest gradient difference, tokens and micro-batches with the shared
        prefix computed once (sharePrefix) and without
  {"op": "chunked-attention", "modelDir": D, "chunkCells": N, "cases": [TrainingBatch, ...]}
      → per case: losses and largest gradient difference, attention in query chunks vs whole
  {"op": "hf-write-tiny" | "hf-logprobs" | "hf-describe", ...}
      → the Hugging Face side of the checkpoint tests (hf_reference.py; needs transformers)

With --serve, one request per line of stdin, each answered by one line of stdout ({"error": ...}
when it fails), so that a test file imports torch and transformers once, not once per request.
"""
from __future__ import annotations

import json
import sys
import tempfile
from typing import Any, Dict

import torch

from .losses import correction_weights


def check_correction(req: Dict[str, Any]) -> Dict[str, Any]:
    out = []
    for case in req["cases"]:
        mask = [bool(x) for x in case["lossMask"]]
        idx = [i for i, m in enumerate(mask) if m]
        seq_raw = case.get("sequence") or [0] * len(mask)
        ids: Dict[int, int] = {}
        seq = torch.tensor([ids.setdefault(int(seq_raw[i]), len(ids)) for i in idx], dtype=torch.long)
        old = torch.tensor([case["trainLogprobs"][i] for i in idx], dtype=torch.float64)
        roll = torch.tensor([case["rolloutLogprobs"][i] for i in idx], dtype=torch.float64)
        w = correction_weights(old, roll, seq, max(len(ids), 1), case["correction"])["weight"].tolist()
        full = [0.0] * len(mask)
        for i, x in zip(idx, w):
            full[i] = x
        out.append(full)
    return {"weights": out}


def gradients(trainer, batch: Dict[str, Any], **options) -> Dict[str, Any]:
    trainer._zero_grads()
    m = trainer.forward_backward({"batch": batch, **options})
    grads = {n: p.grad.detach().clone() for n, p in trainer.policy.named_parameters() if p.grad is not None}
    trainer._zero_grads()
    return {"metrics": m, "grads": grads}


def check_tree_vs_paths(req: Dict[str, Any]) -> Dict[str, Any]:
    from .trainer import Trainer

    torch.set_num_threads(int(req.get("threads", 1)))
    results = []
    with tempfile.TemporaryDirectory() as out:
        t = Trainer(req["modelDir"], out, device=req.get("device", "cpu"),
                    micro_batch_tokens=int(req.get("microBatchTokens", 8192)))
        for case in req["cases"]:
            a = gradients(t, case["tree"])
            b = gradients(t, case["paths"])
            diff = max(float((g - b["grads"][n]).abs().max()) for n, g in a["grads"].items())
            scale = max(float(g.abs().max()) for g in a["grads"].values())
            ma, mb = a["metrics"], b["metrics"]
            results.append({"treeLoss": ma["loss"], "pathsLoss": mb["loss"], "lossDiff": abs(ma["loss"] - mb["loss"]),
                            "maxGradDiff": diff, "maxGrad": scale, "treeTokens": ma["tokensProcessed"],
                            "pathsTokens": mb["tokensProcessed"], "pathsMicroBatches": mb["microBatches"]})
    return {"cases": results}


def check_prefix_sharing(req: Dict[str, Any]) -> Dict[str, Any]:
    from .trainer import Trainer

    torch.set_num_threads(int(req.get("threads", 1)))
    results = []
    with tempfile.TemporaryDirectory() as out:
        t = Trainer(req["modelDir"], out, device=req.get("device", "cpu"),
                    micro_batch_tokens=int(req.get("microBatchTokens", 8192)),
                    micro_batch_cells=int(req.get("microBatchCells", 0)))
        for batch in req["cases"]:
            a = gradients(t, batch, sharePrefix=True)
            b = gradients(t, batch, sharePrefix=False)
            diff = max(float((g - b["grads"][n]).abs().max()) for n, g in a["grads"].items())
            scale = max(float(g.abs().max()) for g in a["grads"].values())
            ma, mb = a["metrics"], b["metrics"]
            results.append({"sharedLoss": ma["loss"], "plainLoss": mb["loss"], "lossDiff": abs(ma["loss"] - mb["loss"]),
                            "maxGradDiff": diff, "maxGrad": scale, "sharedTokens": ma["tokensProcessed"],
                            "plainTokens": mb["tokensProcessed"], "sharedMicroBatches": ma["microBatches"],
                            "plainMicroBatches": mb["microBatches"]})
    return {"cases": results}


def check_chunked_attention(req: Dict[str, Any]) -> Dict[str, Any]:
    """Each case's gradients with attention in small query chunks against the whole score matrix."""
    from . import attention as model_module
    from .trainer import Trainer

    torch.set_num_threads(int(req.get("threads", 1)))
    results = []
    saved = model_module.ATTENTION_CHUNK_CELLS
    try:
        with tempfile.TemporaryDirectory() as out:
            t = Trainer(req["modelDir"], out, device="cpu", micro_batch_tokens=int(req.get("microBatchTokens", 8192)))
            for batch in req["cases"]:
                model_module.ATTENTION_CHUNK_CELLS = int(req.get("chunkCells", 4096))
                a = gradients(t, batch)
                model_module.ATTENTION_CHUNK_CELLS = 1 << 62
                b = gradients(t, batch)
                diff = max(float((g - b["grads"][n]).abs().max()) for n, g in a["grads"].items())
                scale = max(float(g.abs().max()) for g in a["grads"].values())
                results.append({"chunkedLoss": a["metrics"]["loss"], "wholeLoss": b["metrics"]["loss"],
                                "lossDiff": abs(a["metrics"]["loss"] - b["metrics"]["loss"]),
                                "maxGradDiff": diff, "maxGrad": scale})
    finally:
        model_module.ATTENTION_CHUNK_CELLS = saved
    return {"cases": results}


def answer(req: Dict[str, Any]) -> Dict[str, Any]:
    op = req.get("op")
    if op == "correction":
        return check_correction(req)
    if op == "tree-vs-paths":
        return check_tree_vs_paths(req)
    if op == "prefix-sharing":
        return check_prefix_sharing(req)
    if op == "chunked-attention":
        return check_chunked_attention(req)
    if op in ("hf-write-tiny", "hf-logprobs", "hf-describe"):  # need transformers (hf_reference.py)
        from . import hf_reference
        return {"hf-write-tiny": hf_reference.write_tiny, "hf-logprobs": hf_reference.reference_logprobs,
                "hf-describe": hf_reference.describe}[op](req)
    raise ValueError(f"checks: unknown op {op!r}")


def serve() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            out = answer(json.loads(line))
        except Exception as e:  # the request's failure, told to the test; the process goes on
            out = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    return 0


def main() -> int:
    if "--serve" in sys.argv[1:]:
        return serve()
    try:
        out = answer(json.load(sys.stdin))
    except ValueError as e:
        print(str(e), file=sys.stderr)
        return 2
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
