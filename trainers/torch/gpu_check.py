"""GPU check: forward_backward throughput on tree-packed against per-path batches of the same
rollouts, on a Qwen3-0.6B-shaped policy with random weights, and agreement of their gradients.

  python3 -m trainers.torch.gpu_check [--rollouts 8] [--turns 6] [--repeats 3] [--long 32768]

Nothing is downloaded. The model is this project's Policy class with Qwen3-0.6B's shapes (28
layers, d=1024, 16 query / 8 KV heads of 128, SwiGLU 3072, vocab 151936, tied embeddings). When
`transformers` is installed, Qwen3ForCausalLM is built from the same config and weights and its
logits are compared with the Policy's (the layouts are meant to be identical).

Steps: (1) architecture check against transformers (optional); (2) gradient agreement, tree vs
paths, in float32 with TF32 off on two rollouts; (3) throughput in bfloat16, tree vs paths, median
of --repeats after a warm-up; (4) one long rollout (--long tokens, three retries) in bfloat16:
seconds and peak memory with flex_attention's block mask and with the checkpointed query chunks
(attention.py), and their losses; (5) FSDP on one GPU (a process group of one): the loss and the
weights after one optimizer step against the unwrapped trainer. Prints a table and a final JSON
line. Sized for well under 5 minutes on one H200.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from typing import Any, Dict, List

import torch

from .batch import owner_leaves
from .model import Policy, PolicyConfig
from .trainer import Trainer

QWEN3_06B = dict(vocab_size=151936, hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, intermediate_size=3072, rope_theta=1000000.0,
                 rms_norm_eps=1e-6, tie_word_embeddings=True, max_position_embeddings=40960)

ALGORITHM = {"type": "GRPO", "clip": {"low": 0.2, "high": 0.28}, "klCoef": 0.0, "entropyCoef": 0.0,
             "correction": {"type": "TIS", "level": "token", "cap": 2.0}, "lossAggregation": "token-mean"}


def agent_tree(rng: random.Random, rollout: str, vocab: int, turns: int, fork: float, scale: float = 1.0) -> Dict[str, Any]:
    """Prompt, then turns of (completion, tool result), with sibling completions (retries/subagents)."""
    t: Dict[str, List] = {k: [] for k in ("tokens", "parent", "position", "lossMask", "rolloutLogprobs", "advantages")}
    adv = rng.uniform(-1, 1)

    def seg(prev: int, n: int, gen: bool) -> int:
        for _ in range(n):
            i = len(t["tokens"])
            t["tokens"].append(rng.randrange(vocab))
            t["parent"].append(prev)
            t["position"].append(0 if prev < 0 else t["position"][prev] + 1)
            t["lossMask"].append(1 if gen else 0)
            t["rolloutLogprobs"].append(-math.log(vocab) + rng.uniform(-0.05, 0.05) if gen else 0.0)
            t["advantages"].append(adv if gen else 0.0)
            prev = i
        return prev

    def turn(prev: int, left: int) -> None:
        if left == 0:
            return
        n = lambda lo, hi: max(1, int(rng.randint(lo, hi) * scale))  # noqa: E731
        end = seg(seg(prev, n(100, 300), True), n(150, 500), False)
        forked = rng.random() < fork
        turn(end, left - 1)  # depth-first: the path goes on before its sibling is packed
        if forked:
            turn(seg(prev, n(100, 300), True), min(2, left - 1))

    turn(seg(-1, max(1, int(1200 * scale)), False), turns)
    n = len(t["tokens"])
    return dict(rollout=rollout, task="gpu", harness="check", branch=[-1] * n, **t)


def unpack_paths(tree: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Per-path samples with the exactly-once mask (as src/runtime/trajectories/samples.ts)."""
    import numpy as np

    parent = tree["parent"]
    owner = owner_leaves(np.asarray(parent))
    has_child = set(p for p in parent if p >= 0)
    out, leaf = [], 0
    for end in range(len(parent)):
        if end in has_child:
            continue
        idx, k = [], end
        while k >= 0:
            idx.append(k)
            k = parent[k]
        idx.reverse()
        trained = [1 if tree["lossMask"][i] and owner[i] == leaf else 0 for i in idx]
        out.append(dict(rollout=tree["rollout"], task="gpu", harness="check", leaf=leaf,
                        tokens=[tree["tokens"][i] for i in idx], lossMask=trained,
                        rolloutLogprobs=[tree["rolloutLogprobs"][i] if m else 0.0 for i, m in zip(idx, trained)],
                        advantages=[tree["advantages"][i] if m else 0.0 for i, m in zip(idx, trained)]))
        leaf += 1
    return out


def batches(trees: List[Dict[str, Any]]):
    comp = {"pairs": [], "harnesses": {}}
    tree = dict(formatVersion=1, step=0, layout="tree", trees=trees, algorithm=ALGORITHM, composition=comp)
    paths = dict(formatVersion=1, step=0, layout="paths", paths=[p for t in trees for p in unpack_paths(t)],
                 algorithm=ALGORITHM, composition=comp)
    return tree, paths


def build_policy(shape: Dict[str, Any], dtype: torch.dtype, seed: int, device: str) -> Policy:
    torch.manual_seed(seed)
    cfg = PolicyConfig(**shape)
    if device == "cuda" and hasattr(torch.device("cuda"), "__enter__"):
        with torch.device("cuda"):  # allocate on the GPU directly (torch >= 2)
            policy = Policy(cfg)
    else:
        policy = Policy(cfg).to(device)
    with torch.no_grad():
        for name, p in policy.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.normal_(0.0, cfg.initializer_range)
    return policy.to(dtype)


def check_transformers(policy: Policy, shape: Dict[str, Any], device: str) -> Dict[str, Any]:
    try:
        import transformers
        from transformers import Qwen3Config, Qwen3ForCausalLM
    except Exception as e:  # not installed or too old
        return {"transformers": None, "note": f"transformers check skipped: {type(e).__name__}: {e}"}
    cfg = Qwen3Config(**shape)
    hf = Qwen3ForCausalLM(cfg).float().to(device)
    missing, unexpected = hf.load_state_dict(policy.policy_state_dict(), strict=False)
    hf.eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 256), device=device)
    pos = torch.arange(256, device=device)[None]
    with torch.no_grad():
        a = hf(input_ids=ids, position_ids=pos).logits.float()
        b = policy(ids, pos)
    del hf
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"transformers": transformers.__version__, "missingKeys": list(missing)[:5],
            "unexpectedKeys": list(unexpected)[:5], "maxLogitDiff": float((a - b).abs().max()),
            "logitScale": float(b.abs().max())}


def long_tree(rng: random.Random, tokens: int, vocab: int) -> Dict[str, Any]:
    """One rollout of about `tokens` tokens: a long context whose path forks three times (retries)."""
    t = agent_tree(rng, "long", vocab, 1, 0.0)
    parent, n = t["parent"], len(t["tokens"])
    forks = {int(tokens * k / 4) for k in (1, 2, 3)}

    def add(prev: int, gen: bool) -> int:
        t["tokens"].append(rng.randrange(vocab))
        t["parent"].append(prev)
        t["position"].append(t["position"][prev] + 1)
        t["lossMask"].append(1 if gen else 0)
        t["rolloutLogprobs"].append(-math.log(vocab) if gen else 0.0)
        t["advantages"].append(0.5 if gen else 0.0)
        t["branch"].append(-1)
        return len(t["tokens"]) - 1

    end = n - 1
    while len(t["tokens"]) < tokens:
        if forks and len(t["tokens"]) >= min(forks):
            forks.discard(min(forks))
            b = end
            for k in range(240):  # a retried call and its result, packed before the path goes on
                b = add(b, k < 40)
        for k in range(rng.randint(50, 130)):
            end = add(end, k < 30)
    assert len(parent) == len(t["tokens"])
    return t


def long_rows(shape: Dict[str, Any], device: str, seed: int, tokens: int) -> Dict[str, Any]:
    """(4): one long rollout, flex block mask against query chunks."""
    from . import attention

    rng = random.Random(seed + 1)
    tree = long_tree(rng, tokens, shape["vocab_size"])
    batch, _ = batches([tree])
    out: Dict[str, Any] = {"tokens": len(tree["tokens"]), "flexAvailable": attention._flex() is not None}
    for name, flag in (("flex", "1"), ("chunks", "0")):
        if name == "flex" and not out["flexAvailable"]:
            continue
        os.environ["REINS_FLEX_ATTENTION"] = flag
        policy = build_policy(shape, torch.bfloat16 if device == "cuda" else torch.float32, seed, device)
        trainer = Trainer(tempfile.mkdtemp(), tempfile.mkdtemp(), device=device, policy=policy,
                          micro_batch_tokens=tokens * 2)
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        m = trainer.forward_backward({"batch": batch})
        if device == "cuda":
            torch.cuda.synchronize()
        out[name] = {"seconds": time.perf_counter() - t0, "loss": m["loss"],
                     "peakMemoryGiB": torch.cuda.max_memory_allocated() / 2 ** 30 if device == "cuda" else None}
        del trainer, policy
        if device == "cuda":
            torch.cuda.empty_cache()
    os.environ.pop("REINS_FLEX_ATTENTION", None)
    return out


def fsdp_one_gpu(shape: Dict[str, Any], trees: List[Dict[str, Any]], seed: int) -> Dict[str, Any]:
    """(5): FSDP in a process group of one against the plain trainer: loss, then weights after a step."""
    import torch.distributed as td

    from .distributed import Dist

    if not td.is_initialized():
        td.init_process_group("nccl", init_method="tcp://127.0.0.1:29517", rank=0, world_size=1)
    batch, _ = batches(trees[:2])
    res = {}
    for name, dist in (("plain", Dist.single()), ("fsdp", Dist(0, 1, 0, sharded=True))):
        policy = build_policy(shape, torch.float32, seed, "cuda")
        trainer = Trainer(tempfile.mkdtemp(), tempfile.mkdtemp(), device="cuda", policy=policy, dist=dist)
        m = trainer.forward_backward({"batch": batch})
        trainer.optim_step({"learningRate": 1e-4})
        sd = dist.full_state_dict(trainer.model, trainer.policy)
        res[name] = {"loss": m["loss"], "weights": {k: v.detach().float().cpu() for k, v in sd.items()},
                     "peakMemoryGiB": torch.cuda.max_memory_allocated() / 2 ** 30}
        del trainer, policy
        torch.cuda.empty_cache()
    a, b = res["plain"]["weights"], res["fsdp"]["weights"]
    diff = max(float((a[k] - b[k]).abs().max()) for k in a)
    return {"plainLoss": res["plain"]["loss"], "fsdpLoss": res["fsdp"]["loss"], "maxWeightDiff": diff,
            "agree": bool(abs(res["plain"]["loss"] - res["fsdp"]["loss"]) < 1e-4 * max(1.0, abs(res["plain"]["loss"]))
                          and diff < 1e-5),
            "fsdpPeakMemoryGiB": res["fsdp"]["peakMemoryGiB"]}


def grads(trainer: Trainer, batch) -> Dict[str, Any]:
    trainer._zero_grads()
    m = trainer.forward_backward({"batch": batch})
    g = {n: p.grad.detach().float().clone() for n, p in trainer.policy.named_parameters() if p.grad is not None}
    trainer._zero_grads()
    return {"metrics": m, "grads": g}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m trainers.torch.gpu_check")
    ap.add_argument("--rollouts", type=int, default=8)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--long", type=int, default=32768, help="tokens of the long rollout of step (4); 0 skips it")
    ap.add_argument("--no-fsdp", action="store_true", help="skip step (5)")
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny shapes on CPU: exercises the script only")
    a = ap.parse_args(argv)
    device = "cpu" if a.cpu_smoke else "cuda"
    shape = dict(QWEN3_06B)
    scale_len = 1.0
    if a.cpu_smoke:
        shape.update(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, intermediate_size=128)
        scale_len = 0.1
    elif not torch.cuda.is_available():
        print("gpu_check: no CUDA device; this check runs on a GPU machine (--cpu-smoke runs tiny shapes)",
              file=sys.stderr)
        return 1
    t_start = time.perf_counter()
    out: Dict[str, Any] = {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
                           "torch": torch.__version__}
    rng = random.Random(a.seed)
    trees = [agent_tree(rng, f"r{k}", shape["vocab_size"], a.turns, 0.35, scale_len) for k in range(a.rollouts)]
    tmp = tempfile.mkdtemp()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    # (1) + (2): float32, TF32 off.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    policy = build_policy(shape, torch.float32, a.seed, device)
    out["parameters"] = sum(p.numel() for p in policy.parameters())
    out["architecture"] = check_transformers(policy, shape, device)
    trainer = Trainer(tmp, tmp, device=device, policy=policy)
    small_tree, small_paths = batches(trees[:2])
    ga, gb = grads(trainer, small_tree), grads(trainer, small_paths)
    diff = max(float((g - gb["grads"][n]).abs().max()) for n, g in ga["grads"].items())
    scale = max(float(g.abs().max()) for g in ga["grads"].values())
    out["gradients"] = {"dtype": "float32", "rollouts": 2, "treeLoss": ga["metrics"]["loss"],
                        "pathsLoss": gb["metrics"]["loss"], "maxGradDiff": diff, "maxGrad": scale,
                        "relative": diff / scale if scale else None,
                        "agree": bool(scale > 0 and diff / scale < 1e-4)}
    del trainer, policy, ga, gb
    if device == "cuda":
        torch.cuda.empty_cache()

    # (3): bfloat16 throughput (float32 in the CPU smoke run).
    policy = build_policy(shape, torch.bfloat16 if device == "cuda" else torch.float32, a.seed, device)
    trainer = Trainer(tmp, tmp, device=device, policy=policy, micro_batch_tokens=16384)
    tree_b, paths_b = batches(trees)
    rows = {}
    for name, b in (("tree", tree_b), ("paths", paths_b)):
        trainer.forward_backward({"batch": b})  # warm-up
        trainer._zero_grads()
        secs = []
        m = {}
        for _ in range(a.repeats):
            sync()
            t0 = time.perf_counter()
            m = trainer.forward_backward({"batch": b})
            sync()
            secs.append(time.perf_counter() - t0)
            trainer._zero_grads()
        s = sorted(secs)[len(secs) // 2]
        rows[name] = {"tokensProcessed": m["tokensProcessed"], "trainedTokens": m["tokens"], "seconds": s,
                      "tokensPerSecond": m["tokensProcessed"] / s, "trainedTokensPerSecond": m["tokens"] / s,
                      "loss": m["loss"], "microBatches": m["microBatches"]}
    out["throughput"] = rows
    out["speedup"] = rows["paths"]["seconds"] / rows["tree"]["seconds"]
    out["peakMemoryGiB"] = torch.cuda.max_memory_allocated() / 2 ** 30 if device == "cuda" else None
    del trainer, policy
    if device == "cuda":
        torch.cuda.empty_cache()
    if a.long:
        out["long"] = long_rows(shape, device, a.seed, a.long if not a.cpu_smoke else min(a.long, 2048))
    if device == "cuda" and not a.no_fsdp:
        out["fsdp"] = fsdp_one_gpu(shape, trees, a.seed)
    out["wallSeconds"] = time.perf_counter() - t_start

    what = "tiny shapes, CPU smoke run" if a.cpu_smoke else "Qwen3-0.6B shapes"
    print(f"{out['device']}, torch {out['torch']}, {out['parameters'] / 1e6:.1f}M parameters ({what})")
    arch = out["architecture"]
    if arch.get("transformers"):
        print(f"transformers {arch['transformers']}: max |logit diff| vs Qwen3ForCausalLM {arch['maxLogitDiff']:.2e} "
              f"(logits up to {arch['logitScale']:.2f})")
    else:
        print(arch["note"])
    g = out["gradients"]
    print(f"gradients tree vs paths (fp32, 2 rollouts): max diff {g['maxGradDiff']:.2e} of max {g['maxGrad']:.2e}; "
          f"loss {g['treeLoss']:.6f} vs {g['pathsLoss']:.6f}; agree={g['agree']}")
    print("| layout | tokens through the model | trained tokens | seconds | tokens/s | trained tokens/s |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['tokensProcessed']} | {r['trainedTokens']} | {r['seconds']:.3f} | "
              f"{r['tokensPerSecond']:.0f} | {r['trainedTokensPerSecond']:.0f} |")
    mem = f"; peak memory {out['peakMemoryGiB']:.1f} GiB" if out["peakMemoryGiB"] is not None else ""
    print(f"tree-packed vs per-path: {out['speedup']:.2f}x{mem}")
    ok = g["agree"]
    if "long" in out:
        lg = out["long"]
        for name in ("flex", "chunks"):
            if name in lg:
                r = lg[name]
                pm = f", peak {r['peakMemoryGiB']:.1f} GiB" if r["peakMemoryGiB"] is not None else ""
                print(f"long rollout, {lg['tokens']} tokens, {name}: {r['seconds']:.1f} s{pm}, loss {r['loss']:.6f}")
        if "flex" in lg:
            ok = ok and abs(lg["flex"]["loss"] - lg["chunks"]["loss"]) < 1e-2 * max(1.0, abs(lg["chunks"]["loss"]))
    if "fsdp" in out:
        f = out["fsdp"]
        print(f"FSDP on one GPU: loss {f['fsdpLoss']:.6f} vs {f['plainLoss']:.6f}, max weight diff after a step "
              f"{f['maxWeightDiff']:.2e}; agree={f['agree']}")
        ok = ok and f["agree"]
    print(f"wall {out['wallSeconds']:.0f} s")
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
