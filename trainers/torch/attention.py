"""Training attention in O(S) mask memory: who may attend to whom is one integer per key.

A packed tree lists its tokens depth-first (pre-order), so the subtree of token j is the contiguous
range j..end[j]. Query i may attend to key j exactly when j is i or one of its ancestors, that is
when j <= i <= end[j]. A plain causal row is the tree of one chain (end[j] = the row's last real
token); a padding position ends at itself, so it attends to itself only and no real token sees it.
With a shared prefix of P keys computed once, query q of a row has the absolute index P + q.

The score matrix is never held whole: queries go in chunks of about ATTENTION_CHUNK_CELLS score
cells (rows × heads × queries × keys), each chunk builds its own boolean mask from `key_end` and
looks only at keys up to its last query (later keys are never ancestors). Under autograd each chunk
is checkpointed, so its scores are recomputed in backward instead of kept. Memory: Q, K, V and
`key_end` (O(S)) plus one chunk's scores; time: the causal half of the dense scores, once more in
backward. The ONNX export and generation with a KV cache keep the dense additive mask (model.py).

On CUDA with torch >= 2.5, `flex_attention` takes the same rule as a mask_mod and builds a block
mask from it (blocks no query can see are skipped; memory O(S) too); it has no backward on CPU, so
CPU training keeps the chunks. REINS_FLEX_ATTENTION=0 turns it off, =1 also uses it without a GPU
(forward only: how its agreement with the chunks is tested on CPU).
"""
from __future__ import annotations

from dataclasses import dataclass

import os

import numpy as np
import torch
from torch.utils.checkpoint import checkpoint

# One chunk's score cells (rows × heads × queries × keys). The default, 64M cells, is a 4K-token row
# with 4 heads in one piece; a 64K-token row goes in chunks of 256 queries (256 MB of fp32 scores).
ATTENTION_CHUNK_CELLS = 1 << 26


class NotDepthFirst(ValueError):
    """A tree whose tokens are not in depth-first pre-order (some subtree is not contiguous)."""

    def __init__(self, token: int, parent: int):
        super().__init__(f"token {token} hangs under token {parent}, whose subtree had already ended")
        self.token, self.parent = token, parent


def subtree_ends(parent: np.ndarray) -> np.ndarray:
    """end[j]: the last index of j's subtree, for parent pointers in depth-first pre-order (-1 for
    a root). Raises NotDepthFirst when a token's parent is not on the path to the previous token."""
    n = parent.shape[0]
    end = np.arange(n, dtype=np.int64)
    stack: list = []
    for i, p in enumerate(parent.tolist()):
        if p < 0:
            for j in stack:
                end[j] = i - 1
            stack = []
        else:
            while stack and stack[-1] != p:
                end[stack.pop()] = i - 1
            if not stack:
                raise NotDepthFirst(i, p)
        stack.append(i)
    for j in stack:
        end[j] = n - 1
    return end


@dataclass
class TreeMask:
    """key_end [B, P+S] int64; `offset` = P, the absolute index of each row's query 0."""
    key_end: torch.Tensor
    offset: int = 0
    block_mask: object = None  # flex_attention's, built once for all layers


def causal_tree_mask(b: int, s: int, offset: int, device) -> TreeMask:
    """Every key visible to every later query (no padding)."""
    return TreeMask(torch.full((b, offset + s), offset + s - 1, dtype=torch.int64, device=device), offset)


def visible(key_end: torch.Tensor, q0: int, q1: int, offset: int, keys: int) -> torch.Tensor:
    """Bool [B, 1, q1-q0, keys]: absolute queries offset+q0 .. offset+q1-1 against keys 0..keys-1."""
    qi = torch.arange(offset + q0, offset + q1, device=key_end.device)[:, None]
    kj = torch.arange(keys, device=key_end.device)[None, :]
    return ((kj <= qi)[None] & (qi[None] <= key_end[:, None, :keys]))[:, None]


def masked_attention(q, k, v, mask, scale: float):
    """softmax(q·kᵀ·scale, masked) · v with a bool mask [B or 1, 1, S, T] (True = may attend):
    the same values as adding the mask's additive form (0 / finfo.min/2)."""
    scores = torch.matmul(q * scale, k.transpose(-1, -2))
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min / 2)
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def _chunk(q, k, v, key_end, q0: int, offset: int, scale: float):
    return masked_attention(q, k, v, visible(key_end, q0, q0 + q.shape[2], offset, k.shape[2]), scale)


_FLEX = None


def _flex():
    """(flex_attention compiled, create_block_mask), or None where it cannot train here."""
    global _FLEX
    if _FLEX is None:
        _FLEX = False
        try:
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention

            _FLEX = (torch.compile(flex_attention, dynamic=False), create_block_mask)
        except Exception:  # torch < 2.5
            pass
    return _FLEX or None


def use_flex(q: torch.Tensor) -> bool:
    flag = os.environ.get("REINS_FLEX_ATTENTION", "")
    if flag == "0" or (not q.is_cuda and flag != "1"):
        return False
    return _flex() is not None


def flex_tree_attention(q, k, v, mask: TreeMask, scale: float):
    flex, create_block_mask = _flex()
    b, _, s, _ = q.shape
    t = k.shape[2]
    if mask.block_mask is None:
        key_end, offset = mask.key_end, mask.offset

        def visible_mod(bi, hi, qi, kj):
            a = qi + offset
            return (kj <= a) & (a <= key_end[bi, kj])

        mask.block_mask = create_block_mask(visible_mod, b, None, s, t, device=q.device)
    return flex(q, k, v, block_mask=mask.block_mask, scale=scale)


def tree_attention(q, k, v, mask: TreeMask, scale: float, cells: int = 0):
    """q [B, H, S, D]; k, v [B, H, P+S, D] (P = mask.offset keys of a shared prefix first)."""
    if use_flex(q):
        return flex_tree_attention(q, k, v, mask, scale)
    b, h, s, _ = q.shape
    t = k.shape[2]
    budget = cells or ATTENTION_CHUNK_CELLS
    c = max(1, min(s, budget // max(1, b * h * t)))
    keep = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
    outs = []
    for q0 in range(0, s, c):
        q1 = min(s, q0 + c)
        last = mask.offset + q1  # keys after the chunk's last query are never visible
        args = (q[:, :, q0:q1], k[:, :, :last], v[:, :, :last], mask.key_end, q0, mask.offset, scale)
        outs.append(checkpoint(_chunk, *args, use_reentrant=False) if keep and c < s else _chunk(*args))
    return outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)
