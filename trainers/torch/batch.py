"""Loading and checking training batches (the TrainingBatch contract, JSON or binary directory).

A batch becomes a list of `Row`s: one per packed tree (layout "tree") or per root-to-leaf path
(layout "paths"). Every row knows, for each token, which position's output predicts it (`pred`:
the parent in a tree, the previous token on a path, -1 for none) and, for each trained token, its
sequence (`seq`): the trained tokens one leaf owns (`ownerLeaf` in a tree; the path itself in the
per-path layout, whose exactly-once mask trains exactly those tokens). Sequence-level corrections
and the sequence-* loss aggregations use it, so both layouts of the same rollouts give the same loss.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import numpy as np

from .attention import NotDepthFirst, subtree_ends


class BatchProblem(Exception):
    """A batch the worker refuses; `code` is permanent, message and hint are plain words."""

    def __init__(self, code: str, message: str, hint: str):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


@dataclass
class Row:
    rollout: str
    tokens: np.ndarray  # int64 [n]
    position: np.ndarray  # int64 [n]
    parent: Optional[np.ndarray]  # int64 [n] for trees, None for plain causal paths
    pred: np.ndarray  # int64 [n], -1 = no prediction
    loss_mask: np.ndarray  # bool [n]
    rollout_lp: np.ndarray  # float32 [n]
    adv: np.ndarray  # float32 [n]
    returns: Optional[np.ndarray]  # float32 [n] (PPO value targets) or None
    seq: np.ndarray  # int64 [n]: batch-wide sequence id of each trained token, -1 elsewhere
    group: int  # rollout index (micro-batches never split a rollout)
    coef: Optional[np.ndarray] = None  # float32 [n] aggregation coefficient per trained token
    end: Optional[np.ndarray] = None  # int64 [n] for trees: the last index of each token's subtree
    leaf: int = -1  # the path's leaf index (layout "paths"); -1 for a tree


@dataclass
class Batch:
    step: int
    layout: str
    algorithm: Dict[str, Any]
    rows: List[Row]
    num_seqs: int
    num_rollouts: int


NAMES = {"loss_mask": "lossMask", "rollout_logprobs": "rolloutLogprobs", "owner_leaf": "ownerLeaf"}


def read_batch(req: Dict[str, Any]) -> Dict[str, Any]:
    """The raw TrainingBatch dict from a request: inline `batch` or `batchPath` (JSON file or directory)."""
    if isinstance(req.get("batch"), dict):
        return req["batch"]
    path = req.get("batchPath")
    if not isinstance(path, str):
        raise BatchProblem("MissingBatch", "the request carries neither `batch` nor `batchPath`",
                           "send the batch inline as `batch` or give the path of a batch file as `batchPath`")
    if not os.path.exists(path):
        raise BatchProblem("BatchNotFound", f"the batch path {path} does not exist",
                           "write the batch before calling forward_backward, on a disk the worker can read")
    if os.path.isdir(path):
        return read_binary_dir(path)
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f)


def read_binary_dir(path: str) -> Dict[str, Any]:
    """A binary batch directory (src/runtime/trajectories/binary.ts): batch.json plus one
    little-endian file per array, items slicing them by offset and length."""
    manifest = os.path.join(path, "batch.json")
    if not os.path.exists(manifest):
        raise BatchProblem("BatchNotFound", f"{path} has no batch.json", "point batchPath at a batch directory")
    with open(manifest, "r", encoding="utf-8") as f:
        meta = json.load(f)
    arrays = {}
    for name, spec in meta.get("arrays", {}).items():
        arr = np.fromfile(os.path.join(path, spec["file"]), dtype=np.dtype(spec["dtype"]))
        if "length" in spec and arr.shape[0] != spec["length"]:
            raise BatchProblem("BadBatch", f"{spec['file']} holds {arr.shape[0]} values, the manifest says "
                               f"{spec['length']}", "rewrite the batch directory; it is truncated or stale")
        arrays[NAMES.get(name, name)] = arr
    key = "trees" if meta.get("layout") == "tree" else "paths"
    items = []
    for entry in meta.get(key) or []:
        o, n = entry["offset"], entry["length"]
        item = {k: v for k, v in entry.items() if k not in ("offset", "length")}
        for name, arr in arrays.items():
            item[name] = arr[o:o + n]
        items.append(item)
    out = {k: v for k, v in meta.items() if k not in ("arrays", "trees", "paths")}
    out[key] = items
    return out


def owner_leaves(parent: np.ndarray) -> np.ndarray:
    """For each token, the index (in DFS order) of the first leaf below it; how paths are numbered."""
    n = parent.shape[0]
    has_child = np.zeros(n, dtype=bool)
    has_child[parent[parent >= 0]] = True
    owner = np.full(n, -1, dtype=np.int64)
    leaf = 0
    for end in range(n):
        if has_child[end]:
            continue
        k = end
        while k >= 0 and owner[k] < 0:
            owner[k] = leaf
            k = parent[k]
        leaf += 1
    return owner


def _arr(item: Dict[str, Any], name: str, dtype, n: Optional[int], where: str, required: bool = True):
    v = item.get(name)
    if v is None:
        if required:
            raise BatchProblem("BadBatch", f"{where} has no `{name}`", "build batches with the trajectories exporter")
        return None
    a = np.asarray(v, dtype=dtype)
    if a.ndim != 1 or (n is not None and a.shape[0] != n):
        raise BatchProblem("BadBatch", f"{where}: `{name}` has {a.shape[0] if a.ndim == 1 else a.shape} entries, "
                           f"expected {n}", "every per-token array of a row must have one entry per token")
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        i = int(np.flatnonzero(~np.isfinite(a))[0])
        raise BatchProblem("NonFiniteBatch", f"{where}: `{name}` is {a[i]} at token {i}; the batch was refused",
                           "find where the NaN/inf came from (reward, advantage or logprob) and fix the producer")
    return a


def parse_batch(raw: Dict[str, Any], vocab_size: int) -> Batch:
    layout = raw.get("layout")
    if layout not in ("tree", "paths"):
        raise BatchProblem("BadBatch", f"batch layout is {layout!r}", "use layout \"tree\" or \"paths\"")
    items = raw.get("trees" if layout == "tree" else "paths") or []
    if not items:
        raise BatchProblem("EmptyBatch", "the batch has no rows", "send at least one tree or path")
    rows: List[Row] = []
    group_of: Dict[str, int] = {}
    seq_of: Dict[tuple, int] = {}
    for k, item in enumerate(items):
        where = f"{'tree' if layout == 'tree' else 'path'} {k} (rollout {item.get('rollout')})"
        tokens = _arr(item, "tokens", np.int64, None, where)
        n = tokens.shape[0]
        if n == 0:
            raise BatchProblem("BadBatch", f"{where} has no tokens", "drop empty rows before training")
        if tokens.min() < 0 or tokens.max() >= vocab_size:
            raise BatchProblem("TokenOutOfVocabulary", f"{where} has token id {int(tokens.max())} but the model's "
                               f"vocabulary has {vocab_size} ids", "train the model the engine sampled from")
        mask = _arr(item, "lossMask", np.int64, n, where).astype(bool)
        rlp = _arr(item, "rolloutLogprobs", np.float32, n, where)
        adv = _arr(item, "advantages", np.float32, n, where)
        ret = _arr(item, "returns", np.float32, n, where, required=False)
        rollout = str(item.get("rollout", f"row-{k}"))
        if layout == "tree":
            parent = _arr(item, "parent", np.int64, n, where)
            position = _arr(item, "position", np.int64, n, where)
            idx = np.arange(n)
            if np.any(parent >= idx) or np.any(parent < -1):
                raise BatchProblem("BadBatch", f"{where}: a parent pointer does not point to an earlier token",
                                   "tokens must be in DFS order with parent < index (or -1 for a root)")
            try:
                end = subtree_ends(parent)
            except NotDepthFirst as e:
                raise BatchProblem("BadBatch", f"{where}: the tokens are not in depth-first order: {e}",
                                   "pack each tree depth-first, a node's whole subtree before its next sibling "
                                   "(the trajectories exporter does)") from None
            expect = np.where(parent >= 0, position[np.maximum(parent, 0)] + 1, 0)
            if np.any(position != expect):
                i = int(np.flatnonzero(position != expect)[0])
                raise BatchProblem("BadBatch", f"{where}: position {int(position[i])} at token {i} is not its depth "
                                   f"{int(expect[i])}", "positions must be the depth in the tree (0 at roots)")
            pred = parent.copy()
            owner = _arr(item, "ownerLeaf", np.int64, n, where, required=False)
            if owner is None or np.any(mask & (owner < 0)):
                owner = owner_leaves(parent)
            keys = owner
        else:
            parent = end = None
            position = np.arange(n, dtype=np.int64)
            pred = np.arange(n, dtype=np.int64) - 1
            keys = np.full(n, int(item.get("leaf", k)), dtype=np.int64)
        if np.any(mask & (pred < 0)):
            raise BatchProblem("BadBatch", f"{where}: a root token is marked for training",
                               "the first token of a sequence has no prediction; mask it as context")
        group = group_of.setdefault(rollout, len(group_of))
        seq = np.full(n, -1, dtype=np.int64)
        for i in np.flatnonzero(mask):
            seq[i] = seq_of.setdefault((rollout, int(keys[i])), len(seq_of))
        leaf = -1 if layout == "tree" else int(item.get("leaf", k))
        rows.append(Row(rollout, tokens, position, parent, pred, mask, rlp, adv, ret, seq, group, end=end, leaf=leaf))
    alg = raw.get("algorithm") or {}
    return Batch(int(raw.get("step", 0)), layout, alg, rows, max(len(seq_of), 1), len(group_of))


def assign_coefficients(batch: Batch, aggregation: str) -> int:
    """Per-token loss coefficients over the whole batch; returns the number of trained tokens.

    token-mean: 1/N over all trained tokens; sequence-mean: 1/(n_seq * S) (the mean over sequences
    of each sequence's token mean); sequence-sum: 1/S (per-sequence sums, averaged over sequences).
    """
    per_seq = np.zeros(batch.num_seqs, dtype=np.float64)
    for r in batch.rows:
        np.add.at(per_seq, r.seq[r.loss_mask], 1.0)
    total = float(per_seq.sum())
    if total == 0:
        raise BatchProblem("NothingToTrain", "no token in the batch is marked for training",
                           "check the loss masks: generated tokens must have lossMask 1")
    seqs = float(np.count_nonzero(per_seq))
    for r in batch.rows:
        c = np.zeros(r.tokens.shape[0], dtype=np.float64)
        m = r.loss_mask
        if aggregation == "token-mean":
            c[m] = 1.0 / total
        elif aggregation == "sequence-mean":
            c[m] = 1.0 / (per_seq[r.seq[m]] * seqs)
        elif aggregation == "sequence-sum":
            c[m] = 1.0 / seqs
        else:
            raise BatchProblem("BadBatch", f"unknown loss aggregation {aggregation!r}",
                               "use token-mean, sequence-mean or sequence-sum")
        r.coef = c.astype(np.float32)
    return int(total)


def finite_or_problem(value: float, what: str, hint: str) -> None:
    if not math.isfinite(value):
        raise BatchProblem("NonFiniteLoss", f"{what} is {value}; the step was refused", hint)
