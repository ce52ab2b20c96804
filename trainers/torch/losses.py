"""Policy-gradient losses: GRPO/PPO clipped objective, rollout corrections, KL and entropy terms.

Notation per trained token t: lp = log π_θ(t) (trainer, with gradient), μ = rollout logprob (from
the engine), A = advantage, c = aggregation coefficient (batch.assign_coefficients).

Proximal policy π_old:
  * correction "none": π_old = μ (the sampler's logprobs), so r = π_θ/μ and clipping acts on
    the full rollout/trainer gap (classic PPO, "bypass").
  * correction TIS/MIS: π_old = π_θ detached (the trainer's policy when the batch is trained), so
    r = π_θ/π_old and ρ = π_old/μ carries the rollout/trainer gap into the correction weight
    (the formulas of src/runtime/trajectories/correction.ts, which this file is tested against):
      token TIS      w_t = min(ρ_t, C)
      sequence TIS   w_t = min(Π_{s∈seq} ρ_s, C)
      token MIS      w_t = ρ_t       if low ≤ ρ_t ≤ high,          else 0
      sequence MIS   w_t = Π ρ_s     if low ≤ Π ρ_s ≤ high,         else 0
      geometric MIS  w_t = 1         if low ≤ (Π ρ_s)^(1/T) ≤ high, else 0   (T = the sequence's tokens)
    A sequence is the set of trained tokens one leaf owns (batch.py).
Token loss: pg_t = -w_t · min(r_t·A_t, clip(r_t, 1-ε_low, 1+ε_high)·A_t)
            + klCoef · k3(π_ref, π_θ) - entropyCoef · H_t,  with k3 = exp(ref-lp) - (ref-lp) - 1.
The weights multiply the policy-gradient term only. Loss = Σ_t c_t · loss_t.
"""
from __future__ import annotations

import math
from typing import Dict, Optional

import torch


def correction_weights(old_lp: torch.Tensor, rollout_lp: torch.Tensor, seq: torch.Tensor, num_seqs: int,
                       correction: Dict) -> Dict[str, torch.Tensor]:
    """Per-token weight and a bool `limited` (capped for TIS, rejected for MIS); no gradient."""
    kind = correction.get("type", "none")
    log_rho = (old_lp - rollout_lp).double()
    if kind == "none":
        w = torch.ones_like(log_rho)
        return {"weight": w, "limited": torch.zeros_like(w, dtype=torch.bool), "log_rho": log_rho}
    level = correction.get("level", "token")
    if level == "token":
        log_unit = log_rho
    else:
        sums = torch.zeros(num_seqs, dtype=torch.float64, device=log_rho.device).index_add_(0, seq, log_rho)
        if level == "geometric":
            counts = torch.zeros(num_seqs, dtype=torch.float64, device=log_rho.device).index_add_(
                0, seq, torch.ones_like(log_rho))
            sums = sums / counts.clamp(min=1)
        log_unit = sums[seq]
    if kind == "TIS":
        cap = float(correction["cap"])
        limited = log_unit > math.log(cap)
        w = torch.exp(torch.clamp(log_unit, max=math.log(cap)))
    elif kind == "MIS":
        lo, hi = float(correction["low"]), float(correction["high"])
        rho = torch.exp(log_unit)
        limited = (rho < lo) | (rho > hi)
        w = torch.where(limited, torch.zeros_like(rho), torch.ones_like(rho) if level == "geometric" else rho)
    else:
        raise ValueError(f"unknown correction type {kind!r}")
    return {"weight": w, "limited": limited, "log_rho": log_rho}


def token_terms(logits: torch.Tensor, target: torch.Tensor):
    """Logprob of each target and the entropy of each distribution (logits [N, V] float32)."""
    lp_all = torch.log_softmax(logits, dim=-1)
    lp = lp_all.gather(-1, target[:, None]).squeeze(-1)
    ent = -(lp_all.exp() * lp_all).sum(-1)
    return lp, ent


def policy_loss(lp: torch.Tensor, ent: torch.Tensor, mb, alg: Dict, num_seqs: int,
                ref_lp: Optional[torch.Tensor]) -> Dict[str, torch.Tensor]:
    """The clipped objective with corrections, KL and entropy; returns the scalar loss and sums for metrics."""
    correction = alg.get("correction") or {"type": "none"}
    clip = alg.get("clip") or {"low": 0.2, "high": 0.2}
    kl_coef = float(alg.get("klCoef", 0.0) or 0.0)
    ent_coef = float(alg.get("entropyCoef", 0.0) or 0.0)
    decoupled = correction.get("type", "none") != "none"
    old = lp.detach() if decoupled else mb.rollout_lp
    cw = correction_weights(lp.detach(), mb.rollout_lp, mb.seq, num_seqs, correction)
    w = cw["weight"].to(lp.dtype)
    ratio = torch.exp(lp - old)
    adv = mb.adv
    lo, hi = 1.0 - float(clip["low"]), 1.0 + float(clip["high"])
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, lo, hi) * adv
    surrogate = torch.minimum(unclipped, clipped)
    pg = -w * surrogate
    loss_t = pg - ent_coef * ent
    kl = None
    if ref_lp is not None:
        d = ref_lp - lp
        kl = torch.exp(d) - d - 1.0
        loss_t = loss_t + kl_coef * kl
    c = mb.coef
    with torch.no_grad():
        delta = lp.detach() - mb.rollout_lp
        stats = {
            "pg": (c * pg).sum(), "entropy": ent.detach().sum(),
            "clipped": (clipped.detach() < unclipped.detach()).sum().double(),
            "kl": kl.detach().sum() if kl is not None else torch.zeros((), device=lp.device),
            "kl_rollout": (torch.exp(-delta) + delta - 1.0).sum(),
            "abs_lp_diff": delta.abs().sum(), "w_sum": cw["weight"].sum(), "w_max": cw["weight"].max(),
            "w_min": cw["weight"].min(), "limited": cw["limited"].sum().double(),
        }
    return {"loss": (c * loss_t).sum(), "stats": stats}


def sft_loss(lp: torch.Tensor, mb) -> Dict[str, torch.Tensor]:
    """Supervised fine-tuning: negative log-likelihood of the trained tokens, aggregated by c_t."""
    nll = -(mb.coef * lp).sum()
    return {"loss": nll, "stats": {"nll": -lp.detach().sum()}}
