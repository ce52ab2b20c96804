"""Create the project's small policy model: tokenizer, config, random weights (seeded), ONNX.

  /usr/bin/python3 -m trainers.torch.init_model --out DIR --seed S [--corpus FILE ...] [--merges N]

DIR receives config.json (HF Qwen3 layout), model.safetensors, model.onnx (KV-cache graph),
tokenizer.json + tokenizer_config.json + chat_template.jinja, and READY holding the weights version.
The same seed and arguments give byte-identical weights (and the same version).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from . import safetensors_io
from .model import Policy, PolicyConfig
from .onnx_export import export_onnx
from .tokenizer import train_merges, write_tokenizer


def create_model(out: str, seed: int, corpus: list, merges: int, layers: int, hidden: int, heads: int,
                 kv_heads: int, intermediate: int, max_len: int, onnx: bool = True) -> dict:
    os.makedirs(out, exist_ok=True)
    texts = []
    for path in corpus:
        with open(path, "r", encoding="utf-8") as f:
            texts.append(f.read())
    learned = train_merges(texts, merges) if texts and merges > 0 else []
    vocab, specials = write_tokenizer(out, learned, max_len)
    head_dim = hidden // heads
    cfg = PolicyConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                       num_key_value_heads=kv_heads, head_dim=head_dim, intermediate_size=intermediate,
                       max_position_embeddings=max_len, special_tokens=specials)
    torch.manual_seed(seed)
    policy = Policy(cfg)
    policy.init_weights(seed)
    data = safetensors_io.save(os.path.join(out, "model.safetensors"), policy.policy_state_dict(),
                               {"format": "pt", "seed": str(seed)})
    version = safetensors_io.content_version(data)
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg.to_hf(), f, indent=1)
    if onnx:
        export_onnx(policy, os.path.join(out, "model.onnx"))
    with open(os.path.join(out, "READY"), "w") as f:
        f.write(version + "\n")
    params = sum(p.numel() for p in policy.parameters())
    return {"dir": os.path.abspath(out), "version": version, "vocabSize": vocab, "merges": len(learned),
            "parameters": params, "specialTokens": specials}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m trainers.torch.init_model")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", action="append", default=[], help="text file(s) to learn BPE merges from")
    ap.add_argument("--merges", type=int, default=0, help="number of BPE merges to learn (needs --corpus)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=0, help="0 = same as --heads")
    ap.add_argument("--intermediate", type=int, default=384)
    ap.add_argument("--max-len", type=int, default=8192)
    ap.add_argument("--no-onnx", action="store_true")
    a = ap.parse_args(argv)
    if a.hidden % a.heads:
        print("init_model: --hidden must be a multiple of --heads", file=sys.stderr)
        return 2
    info = create_model(a.out, a.seed, a.corpus, a.merges, a.layers, a.hidden, a.heads, a.kv_heads or a.heads,
                        a.intermediate, a.max_len, onnx=not a.no_onnx)
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
