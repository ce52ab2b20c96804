"""Export the policy to ONNX for the `onnx` engine.

Graph contract (names follow the common causal-LM export layout):
  inputs   input_ids int64 [B, S], attention_mask int64 [B, P+S] (1 = real token, 0 = padding),
           position_ids int64 [B, S], past_key_values.{i}.key / .value float32 [B, KVH, P, D]
  outputs  logprobs float32 [B, S, V]  (log-softmax of the untempered model),
           present.{i}.key / .value float32 [B, KVH, P+S, D]
Batch, sequence and past lengths are dynamic; P may be 0 (prefill).
"""
from __future__ import annotations

import os
from typing import List

import torch
import torch.nn as nn

from .model import Policy

OPSET = 14


class KVWrapper(nn.Module):
    def __init__(self, policy: Policy):
        super().__init__()
        self.policy = policy
        self.n = policy.config.num_hidden_layers

    def forward(self, input_ids, attention_mask, position_ids, *flat_past):
        past = [(flat_past[2 * i], flat_past[2 * i + 1]) for i in range(self.n)]
        h, presents = self.policy.hidden(input_ids, position_ids, None, past, attention_mask)
        logprobs = torch.log_softmax(self.policy.lm_head(h).float(), dim=-1)
        out: List[torch.Tensor] = [logprobs]
        for k, v in presents:
            out.extend([k, v])
        return tuple(out)


def export_onnx(policy: Policy, path: str) -> str:
    """Write the KV-cache graph to `path` (atomically: a temp file, then rename)."""
    c = policy.config
    policy = policy.eval()
    n = c.num_hidden_layers
    b, s, p = 1, 3, 2
    ids = torch.zeros((b, s), dtype=torch.long)
    am = torch.ones((b, p + s), dtype=torch.long)
    pos = torch.arange(p, p + s, dtype=torch.long)[None]
    past = []
    for _ in range(n):
        past.append(torch.zeros((b, c.num_key_value_heads, p, c.head_dim)))
        past.append(torch.zeros((b, c.num_key_value_heads, p, c.head_dim)))
    in_names = ["input_ids", "attention_mask", "position_ids"]
    out_names = ["logprobs"]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total"},
            "position_ids": {0: "batch", 1: "seq"}, "logprobs": {0: "batch", 1: "seq"}}
    for i in range(n):
        for kind in ("key", "value"):
            nin, nout = f"past_key_values.{i}.{kind}", f"present.{i}.{kind}"
            in_names.append(nin)
            out_names.append(nout)
            axes[nin] = {0: "batch", 2: "past"}
            axes[nout] = {0: "batch", 2: "total"}
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(KVWrapper(policy), (ids, am, pos, *past), tmp, input_names=in_names,
                          output_names=out_names, dynamic_axes=axes, opset_version=OPSET,
                          do_constant_folding=True)
    os.replace(tmp, path)
    return path
