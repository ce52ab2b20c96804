"""Rows → padded micro-batch tensors.

Tree rows get an explicit attention mask: token i may attend to token j iff j is i or an ancestor
of i (built from parent pointers; tokens are in DFS order so a parent precedes its children).
Path rows use the plain causal mask. Micro-batches never split a rollout, so sequence-level
corrections see all of a sequence's trained tokens at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import torch

from .batch import Row


def ancestor_mask(parent: np.ndarray) -> np.ndarray:
    n = parent.shape[0]
    m = np.zeros((n, n), dtype=bool)
    for i in range(n):
        p = parent[i]
        if p >= 0:
            m[i, : p + 1] = m[p, : p + 1]
        m[i, i] = True
    return m


@dataclass
class MicroBatch:
    input_ids: torch.Tensor  # [B, S]
    position_ids: torch.Tensor  # [B, S]
    mask: Optional[torch.Tensor]  # [B, S, S] bool or None (causal)
    # Flat indices of trained tokens (row b, predicting position, token id) and their per-token data.
    b_idx: torch.Tensor
    pred_idx: torch.Tensor
    target: torch.Tensor
    seq: torch.Tensor
    rollout_lp: torch.Tensor
    adv: torch.Tensor
    coef: torch.Tensor
    returns: Optional[torch.Tensor]
    tokens: int  # real (unpadded) tokens processed
    padded: int  # B * S


def group_micro_batches(rows: List[Row], budget: int, cell_budget: int = 1 << 62) -> List[List[Row]]:
    """Greedy groups of whole rollouts within two budgets: padded tokens (rows × longest row) and
    attention cells (rows × longest row²), which bounds the memory of the score matrices."""
    by_group: dict = {}
    for r in rows:
        by_group.setdefault(r.group, []).append(r)
    groups: List[List[Row]] = []
    cur: List[Row] = []
    longest = 0
    for seq_rows in by_group.values():
        ml = max(r.tokens.shape[0] for r in seq_rows)
        grown = max(longest, ml)
        n = len(cur) + len(seq_rows)
        if cur and (n * grown > budget or n * grown * grown > cell_budget):
            groups.append(cur)
            cur, grown = [], ml
        cur.extend(seq_rows)
        longest = grown
    if cur:
        groups.append(cur)
    return groups


def build_micro_batch(rows: List[Row], device: torch.device) -> MicroBatch:
    b = len(rows)
    s = max(r.tokens.shape[0] for r in rows)
    ids = np.zeros((b, s), dtype=np.int64)
    pos = np.zeros((b, s), dtype=np.int64)
    tree = rows[0].parent is not None
    mask = np.zeros((b, s, s), dtype=bool) if tree else None
    bi, pi, tg, sq, rl, ad, cf, rt = [], [], [], [], [], [], [], []
    has_ret = any(r.returns is not None for r in rows)
    for k, r in enumerate(rows):
        n = r.tokens.shape[0]
        ids[k, :n] = r.tokens
        pos[k, :n] = r.position
        if tree:
            mask[k, :n, :n] = ancestor_mask(r.parent)
            idx = np.arange(n, s)
            mask[k, idx, idx] = True  # padding attends to itself only (no empty softmax rows)
        sel = np.flatnonzero(r.loss_mask)
        bi.append(np.full(sel.shape[0], k))
        pi.append(r.pred[sel])
        tg.append(r.tokens[sel])
        sq.append(r.seq[sel])
        rl.append(r.rollout_lp[sel])
        ad.append(r.adv[sel])
        cf.append(r.coef[sel])
        if has_ret:
            rt.append(r.returns[sel] if r.returns is not None else np.zeros(sel.shape[0], np.float32))

    def t(parts, dtype):
        return torch.from_numpy(np.concatenate(parts).astype(dtype)).to(device)

    return MicroBatch(
        input_ids=torch.from_numpy(ids).to(device), position_ids=torch.from_numpy(pos).to(device),
        mask=torch.from_numpy(mask).to(device) if tree else None,
        b_idx=t(bi, np.int64), pred_idx=t(pi, np.int64), target=t(tg, np.int64), seq=t(sq, np.int64),
        rollout_lp=t(rl, np.float32), adv=t(ad, np.float32), coef=t(cf, np.float32),
        returns=t(rt, np.float32) if has_ret else None,
        tokens=int(sum(r.tokens.shape[0] for r in rows)), padded=b * s,
    )
