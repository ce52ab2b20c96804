"""The policy model: a small decoder-only transformer with the Qwen3 layout.

Parameter names, shapes and the HF-style `config.json` follow Qwen3ForCausalLM (RMSNorm,
grouped-query attention with per-head q/k RMSNorm, rotate-half RoPE, SwiGLU MLP, tied embeddings),
so the same class builds the project's tiny CPU policy and a Qwen3-0.6B-shaped model for GPU checks,
and a saved safetensors file loads in tools that know Qwen3.

`forward` serves three callers:
  * training on tree-packed rows: `mask` is a TreeMask (attention.py: one integer per key, the end
    of its subtree, so each token sees its ancestors only, in O(S) mask memory); `position_ids`
    come from the batch;
  * training on per-path rows: `mask=None` gives the plain causal mask (the TreeMask of a chain);
  * ONNX generation with a KV cache: `past` holds (key, value) per layer; `attention_mask` [B, P+S]
    masks padding keys.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import TreeMask, causal_tree_mask, tree_attention

@dataclass
class PolicyConfig:
    vocab_size: int
    hidden_size: int = 128
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    head_dim: int = 32
    intermediate_size: int = 384
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = True
    max_position_embeddings: int = 8192
    initializer_range: float = 0.02
    value_head: bool = False
    special_tokens: dict = field(default_factory=dict)

    def to_hf(self) -> dict:
        """An HF-style config.json (Qwen3ForCausalLM) plus the fields this project adds."""
        d = asdict(self)
        d.update({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_act": "silu",
                  "attention_bias": False, "torch_dtype": "float32", "use_cache": True})
        return d

    @staticmethod
    def from_dict(d: dict) -> "PolicyConfig":
        names = PolicyConfig.__dataclass_fields__.keys()
        return PolicyConfig(**{k: v for k, v in d.items() if k in names})

    @staticmethod
    def load(path: str) -> "PolicyConfig":
        with open(path, "r", encoding="utf-8") as f:
            return PolicyConfig.from_dict(json.load(f))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Rotary(nn.Module):
    def __init__(self, head_dim: int, theta: float):
        super().__init__()
        inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, position_ids: torch.Tensor, dtype: torch.dtype) -> Tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids.float()[..., None] * self.inv_freq  # [B, S, D/2]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]  # [B, 1, S, D]


class Attention(nn.Module):
    def __init__(self, c: PolicyConfig):
        super().__init__()
        self.h, self.kvh, self.d = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.q_proj = nn.Linear(c.hidden_size, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, self.kvh * self.d, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, self.kvh * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, c.hidden_size, bias=False)
        self.q_norm = RMSNorm(self.d, c.rms_norm_eps)
        self.k_norm = RMSNorm(self.d, c.rms_norm_eps)

    def forward(self, x, cos, sin, bias, past: Optional[Tuple[torch.Tensor, torch.Tensor]]):
        b, s, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, s, self.h, self.d)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, s, self.kvh, self.d)).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kvh, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        present = (k, v)
        if self.kvh != self.h:
            rep = self.h // self.kvh
            t = k.shape[2]
            k = k[:, :, None].expand(b, self.kvh, rep, t, self.d).reshape(b, self.h, t, self.d)
            v = v[:, :, None].expand(b, self.kvh, rep, t, self.d).reshape(b, self.h, t, self.d)
        # `bias` is a TreeMask (training and scoring: attention.py, O(S) mask memory) or the dense
        # additive mask (0 where allowed, a large negative number elsewhere) of generation.
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if isinstance(bias, TreeMask):
            out = tree_attention(q, k, v, bias, 1.0 / math.sqrt(self.d))
        elif sdpa is not None and not torch.onnx.is_in_onnx_export():
            out = sdpa(q, k, v, attn_mask=bias)
        else:
            scores = torch.matmul(q * (1.0 / math.sqrt(self.d)), k.transpose(-1, -2))
            scores = scores + bias if torch.onnx.is_in_onnx_export() else scores.add_(bias)
            out = torch.matmul(torch.softmax(scores, dim=-1), v)
        out = out.transpose(1, 2).reshape(b, s, self.h * self.d)
        return self.o_proj(out), present


class MLP(nn.Module):
    def __init__(self, c: PolicyConfig):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c: PolicyConfig):
        super().__init__()
        self.self_attn = Attention(c)
        self.mlp = MLP(c)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, x, cos, sin, bias, past):
        a, present = self.self_attn(self.input_layernorm(x), cos, sin, bias, past)
        x = x + a
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, present


class Backbone(nn.Module):
    def __init__(self, c: PolicyConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(c) for _ in range(c.num_hidden_layers)])
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)


def causal_mask(s: int, past_len, device, attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Bool [B or 1, 1, S, P+S]: query i (absolute P+i) sees keys j <= P+i that are not padding."""
    total = past_len + s
    keys = torch.arange(total, device=device)[None, :]
    queries = (torch.arange(s, device=device) + past_len)[:, None]
    m = (keys <= queries)[None, None]
    if attention_mask is not None:
        m = m & attention_mask.bool()[:, None, None, :]
    return m


class Policy(nn.Module):
    """Decoder-only causal LM; optional scalar value head (PPO critic) on the final hidden states."""

    def __init__(self, c: PolicyConfig):
        super().__init__()
        self.config = c
        self.model = Backbone(c)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        if c.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.rotary = Rotary(c.head_dim, c.rope_theta)
        self.value_head = nn.Linear(c.hidden_size, 1) if c.value_head else None

    def init_weights(self, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        std = self.config.initializer_range
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith("bias"):
                    p.zero_()
                else:
                    p.copy_(torch.randn(p.shape, generator=g) * std)

    def hidden(self, input_ids, position_ids, mask=None, past=None, attention_mask=None):
        """`mask`: a TreeMask (attention.py) or None for the plain causal mask. Generation (ONNX
        export, or padding keys given by `attention_mask`) uses the dense additive mask instead."""
        x = self.model.embed_tokens(input_ids)
        cos, sin = self.rotary(position_ids, x.dtype)
        b, s = input_ids.shape
        past_len = past[0][0].shape[2] if past is not None else 0
        if torch.onnx.is_in_onnx_export() or attention_mask is not None:
            # Half the dtype's minimum, so that adding scores cannot overflow.
            m = causal_mask(s, past_len, input_ids.device, attention_mask)
            bias = torch.zeros(m.shape, dtype=x.dtype, device=x.device).masked_fill(~m, torch.finfo(x.dtype).min / 2)
        else:
            bias = mask if mask is not None else causal_tree_mask(b, s, past_len, input_ids.device)
        presents: List[Tuple[torch.Tensor, torch.Tensor]] = []
        for i, layer in enumerate(self.model.layers):
            x, present = layer(x, cos, sin, bias, past[i] if past is not None else None)
            presents.append(present)
        return self.model.norm(x), presents

    def forward(self, input_ids, position_ids, mask=None, b_idx=None, pred_idx=None, with_values=False, prefix=None,
                past=None):
        """Logits [B, S, V] (float32); or, given flat (b_idx, pred_idx), the logits [N, V] at those
        positions only (and the critic's values there when `with_values`). One entry point, so a
        wrapped (FSDP) module gathers its parameters for every use.

        `prefix` = (ids [1, P], positions [1, P]): a prefix every row shares, computed once; the
        rows (then their suffixes) attend to its keys and values, `mask` covering P+S keys. `past`:
        those keys and values per layer, already computed ([B or 1, KVH, P, D]; then `prefix` is unused)."""
        if past is not None:
            b = input_ids.shape[0]
            past = [(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in past]
        elif prefix is not None:
            _, shared = self.hidden(prefix[0], prefix[1])
            b = input_ids.shape[0]
            past = [(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in shared]
        h, _ = self.hidden(input_ids, position_ids, mask, past)
        if b_idx is None:
            return self.lm_head(h).float()
        hs = h[b_idx, pred_idx]
        return self.lm_head(hs).float(), (self.values(hs) if with_values else None)

    def values(self, h: torch.Tensor) -> torch.Tensor:
        if self.value_head is None:
            raise RuntimeError("this model has no value head")
        return self.value_head(h).squeeze(-1).float()

    def policy_state_dict(self) -> dict:
        """Weights of the policy only (no value head, no tied duplicate), HF Qwen3 names."""
        sd = {k: v for k, v in self.state_dict().items() if not k.startswith("value_head.")}
        if self.config.tie_word_embeddings:
            sd.pop("lm_head.weight", None)
        return sd

    def load_policy_state_dict(self, sd: dict) -> None:
        missing, unexpected = self.load_state_dict(sd, strict=False)
        allowed = {"lm_head.weight"} if self.config.tie_word_embeddings else set()
        missing = [k for k in missing if k not in allowed and not k.startswith("value_head.")]
        if missing or unexpected:
            raise ValueError(f"weights do not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}")
