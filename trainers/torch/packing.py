"""Rows → padded micro-batch tensors.

Every micro-batch carries a TreeMask (attention.py): per key, the last index of its subtree, so
token i attends to token j iff j is i or an ancestor of i (tokens are in depth-first pre-order);
a path row is a chain, a padding position ends at itself. Its memory is O(tokens), never a dense
S×S mask. Micro-batches never split a rollout, so sequence-level corrections see all of a
sequence's trained tokens at once.

Shared prefix: when every row of a micro-batch starts with the same chain of tokens (same ids,
positions 0..P-1, each the parent of the next: a harness's system prompt and tools across a
step's rollouts), the prefix is computed once (with grad) and each row's suffix attends to its
K/V plus the suffix's own tree (or causal) mask. P stops before the first position that predicts
a trained token, so only the prefix's keys and values are needed, never its outputs. Grouping
puts rollouts sharing a prefix together and counts the prefix once in the budgets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import torch

from .attention import TreeMask
from .batch import Row


# Shorter common prefixes are not worth a separate forward.
MIN_SHARED_PREFIX = 32


@dataclass
class MicroBatch:
    input_ids: torch.Tensor  # [B, S] (the suffixes, when a prefix is shared)
    position_ids: torch.Tensor  # [B, S]
    mask: TreeMask  # key_end [B, P+S]: who may attend to whom
    # Flat indices of trained tokens (row b, predicting position, token id) and their per-token data.
    b_idx: torch.Tensor
    pred_idx: torch.Tensor
    target: torch.Tensor
    seq: torch.Tensor
    rollout_lp: torch.Tensor
    adv: torch.Tensor
    coef: torch.Tensor
    returns: Optional[torch.Tensor]
    tokens: int  # real (unpadded) tokens processed, the shared prefix once
    padded: int  # P + B * S
    prefix: Optional[tuple] = None  # (ids [1, P], positions [1, P]) computed once for all rows


def prefix_cap(r: Row) -> int:
    """How many leading tokens of `r` may be shared: a chain from the root at positions 0.., ending
    before the first position that predicts a trained token, and before the row's last token."""
    n = r.tokens.shape[0]
    ar = np.arange(n)
    ok = r.position == ar
    if r.parent is not None:
        ok &= r.parent == ar - 1
    bad = np.flatnonzero(~ok)
    cap = int(bad[0]) if bad.size else n
    preds = r.pred[r.loss_mask]
    if preds.size:
        cap = min(cap, int(preds.min()))
    return max(0, min(cap, n - 1))


def common_prefix(first: np.ndarray, other: np.ndarray, limit: int) -> int:
    neq = np.flatnonzero(first[:limit] != other[:limit])
    return int(neq[0]) if neq.size else limit


def shared_prefix(rows: List[Row], min_rows: int = 2) -> int:
    """The prefix length every row of a micro-batch shares (0: none worth sharing)."""
    if len(rows) < min_rows:
        return 0
    p = min(prefix_cap(r) for r in rows)
    for r in rows[1:]:
        p = common_prefix(rows[0].tokens, r.tokens, p)
    return p if p >= MIN_SHARED_PREFIX else 0


def order_by_prefix(units: List[List[Row]]) -> List[List[Row]]:
    """Rollouts whose rows start alike next to each other: buckets by the first MIN_SHARED_PREFIX
    tokens in order of first appearance, sorted by their tokens within a bucket (rollouts of the
    same task share the most). Rollouts that share nothing keep their order."""
    buckets: dict = {}
    for u in units:
        buckets.setdefault(u[0].tokens[:MIN_SHARED_PREFIX].tobytes(), []).append(u)
    out: List[List[Row]] = []
    for b in buckets.values():
        out.extend(sorted(b, key=lambda u: u[0].tokens.tolist()) if len(b) > 1 else b)
    return out


def group_micro_batches(rows: List[Row], budget: int, cell_budget: int = 1 << 62,
                        share: bool = True) -> List[List[Row]]:
    """Greedy groups of whole rollouts within two budgets: padded tokens (rows × longest row) and
    attention cells (rows × longest row²), which bounds the memory of the score matrices. With
    `share`, a prefix P all rows share counts once: P + rows × (longest − P) tokens and
    rows × (longest − P) × longest cells (the prefix's own P² cells are one row's worth, which a
    micro-batch always admits)."""
    by_group: dict = {}
    for r in rows:
        by_group.setdefault(r.group, []).append(r)
    units = list(by_group.values())
    if share:
        units = order_by_prefix(units)
    groups: List[List[Row]] = []
    cur: List[Row] = []
    longest = 0
    raw_p = 0  # min(caps, common prefix with cur[0]) before the MIN_SHARED_PREFIX threshold

    def unit_prefix(p: int, first: np.ndarray, unit: List[Row]) -> int:
        for r in unit:
            p = common_prefix(first, r.tokens, min(p, prefix_cap(r)))
        return p

    for unit in units:
        ml = max(r.tokens.shape[0] for r in unit)
        grown = max(longest, ml)
        n = len(cur) + len(unit)
        p = unit_prefix(raw_p, cur[0].tokens, unit) if (share and cur) else 0
        eff = p if (n >= 2 and p >= MIN_SHARED_PREFIX) else 0
        tokens = eff + n * (grown - eff)
        cells = n * (grown - eff) * grown
        if cur and (tokens > budget or cells > cell_budget):
            groups.append(cur)
            cur, grown = [], ml
            p = unit_prefix(min(prefix_cap(r) for r in unit), unit[0].tokens, unit) if share else 0
        elif not cur:
            p = unit_prefix(prefix_cap(unit[0]), unit[0].tokens, unit) if share else 0
        cur.extend(unit)
        longest, raw_p = grown, p
    if cur:
        groups.append(cur)
    return groups


def prefix_runs(groups: List[List[Row]]) -> List[tuple]:
    """(run, P) per micro-batch: consecutive micro-batches that share a prefix form a run (numbered
    from 0; -1: not in one) whose P every member shares, so the prefix is computed once for all of
    them. A run stops where joining would cut its prefix below 3/4 of what it was."""
    ps = [shared_prefix(g, 1) for g in groups]
    out: List[tuple] = [(-1, 0)] * len(groups)
    i = run = 0
    while i < len(groups):
        j, p = i + 1, ps[i]
        while p and j < len(groups) and ps[j]:
            q = common_prefix(groups[i][0].tokens, groups[j][0].tokens, min(p, ps[j]))
            if q < MIN_SHARED_PREFIX or 4 * q < 3 * p:
                break
            p, j = q, j + 1
        if j - i >= 2:
            out[i:j] = [(run, p)] * (j - i)
            run += 1
        i = j
    return out


def build_micro_batch(rows: List[Row], device: torch.device, share: bool = True, prefix: Optional[int] = None) -> MicroBatch:
    """`prefix`: the shared prefix length to use (a run's, see prefix_runs); default: the rows' own."""
    b = len(rows)
    p = prefix if prefix is not None else (shared_prefix(rows) if share else 0)
    s = max(r.tokens.shape[0] for r in rows) - p
    ids = np.zeros((b, s), dtype=np.int64)
    pos = np.zeros((b, s), dtype=np.int64)
    key_end = np.tile(np.arange(p + s, dtype=np.int64), (b, 1))  # padding: each position ends at itself
    bi, pi, tg, sq, rl, ad, cf, rt = [], [], [], [], [], [], [], []
    has_ret = any(r.returns is not None for r in rows)
    for k, r in enumerate(rows):
        n = r.tokens.shape[0] - p
        ids[k, :n] = r.tokens[p:]
        pos[k, :n] = r.position[p:]
        key_end[k, : p + n] = r.end if r.end is not None else p + n - 1
        sel = np.flatnonzero(r.loss_mask)
        bi.append(np.full(sel.shape[0], k))
        pi.append(r.pred[sel] - p)
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
        mask=TreeMask(torch.from_numpy(key_end).to(device), p),
        b_idx=t(bi, np.int64), pred_idx=t(pi, np.int64), target=t(tg, np.int64), seq=t(sq, np.int64),
        rollout_lp=t(rl, np.float32), adv=t(ad, np.float32), coef=t(cf, np.float32),
        returns=t(rt, np.float32) if has_ret else None,
        tokens=int(sum(r.tokens.shape[0] - p for r in rows)) + p, padded=p + b * s,
        prefix=(torch.from_numpy(rows[0].tokens[None, :p].copy()).to(device),
                torch.from_numpy(rows[0].position[None, :p].copy()).to(device)) if p else None,
    )
