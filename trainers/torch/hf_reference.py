"""The Hugging Face side of the checkpoint checks (checks.py ops; needs `transformers`, so the
scale environment of scripts/install-python.sh, not Debian's python):

  {"op": "hf-write-tiny", "out": D, "seed": S, "tied": bool, "maxShardSize": "64KB"}
      → a tiny random Qwen3 (2 layers, head_dim 32, the project's byte-level tokenizer) that
        `transformers` itself saves in bfloat16, sharded by max_shard_size; with "sequences", also its
        hf-logprobs (read back from disk)
  {"op": "hf-logprobs", "modelDir": D, "sequences": [[ids]]}
      → transformers' own logprobs (Qwen3ForCausalLM.from_pretrained in float32, eager attention)
        of each token given the previous ones, plus what loading reported missing or unexpected
  {"op": "hf-describe", "modelDir": D}
      → the weight files, the dtypes of their tensors and the tensor count (read with safetensors)
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict

import torch

from .tokenizer import write_tokenizer


def write_tiny(req: Dict[str, Any]) -> Dict[str, Any]:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    out = req["out"]
    os.makedirs(out, exist_ok=True)
    vocab, specials = write_tokenizer(out, [], 4096)
    torch.manual_seed(int(req.get("seed", 0)))
    cfg = Qwen3Config(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=4096,
                      rms_norm_eps=1e-6, tie_word_embeddings=bool(req.get("tied", False)),
                      rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                      # larger than the usual 0.02, so that logprobs differ clearly from token to token
                      initializer_range=0.25, bos_token_id=specials["<|endoftext|>"],
                      eos_token_id=specials["<|im_end|>"], pad_token_id=specials["<|endoftext|>"])
    model = Qwen3ForCausalLM(cfg)
    with torch.no_grad():  # norms away from 1 too, so a misplaced norm weight would show
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape))
    model = model.to(torch.bfloat16)
    model.save_pretrained(out, max_shard_size=req.get("maxShardSize", "64KB"))
    done = {"dir": os.path.abspath(out), "vocabSize": vocab, "files": sorted(os.listdir(out))}
    if req.get("sequences"):
        done["reference"] = reference_logprobs({"modelDir": out, "sequences": req["sequences"]})
    return done


def reference_logprobs(req: Dict[str, Any]) -> Dict[str, Any]:
    from transformers import Qwen3ForCausalLM

    model, info = Qwen3ForCausalLM.from_pretrained(req["modelDir"], dtype=torch.float32, attn_implementation="eager",
                                                   output_loading_info=True)
    model.eval()
    out = []
    with torch.no_grad():
        for s in req["sequences"]:
            ids = torch.tensor([s], dtype=torch.long)
            lp = torch.log_softmax(model(input_ids=ids).logits.float(), dim=-1)[0]
            out.append([None] + [float(x) for x in lp[:-1].gather(-1, ids[0, 1:, None]).squeeze(-1)])
    return {"logprobs": out, "missing": sorted(info.get("missing_keys", [])),
            "unexpected": sorted(info.get("unexpected_keys", [])), "tied": bool(model.config.tie_word_embeddings)}


def describe(req: Dict[str, Any]) -> Dict[str, Any]:
    from safetensors import safe_open

    d = req["modelDir"]
    files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    dtypes, names = set(), []
    for f in files:
        with safe_open(os.path.join(d, f), framework="pt") as st:
            for k in st.keys():
                dtypes.add(str(st.get_slice(k).get_dtype()))
                names.append(k)
    with open(os.path.join(d, "config.json"), "r", encoding="utf-8") as f:
        config = json.load(f)
    return {"files": files, "dtypes": sorted(dtypes), "tensors": sorted(names), "config": config}
