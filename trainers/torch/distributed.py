"""One process, or several ranks under torchrun with FSDP (CUDA only).

`Dist.single()` is the CPU path used here. `Dist.from_env()` turns on when torchrun's WORLD_SIZE > 1
(or REINS_FSDP=1 under torchrun with one process: FSDP on one GPU) and CUDA is available: NCCL process group, the policy wrapped in FullyShardedDataParallel (one unit
per decoder layer where the torch version supports it), micro-batches split across ranks, losses
and metrics summed over ranks. FSDP is imported only on that path (Debian's torch 1.13 on Python
3.11 cannot even import it). The multi-rank path has not been run on this project's machines.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

import torch


class Dist:
    def __init__(self, rank: int = 0, world: int = 1, local_rank: int = 0, sharded: Optional[bool] = None):
        self.rank, self.world, self.local_rank = rank, world, local_rank
        # FSDP: always with several ranks; with one, when asked (REINS_FSDP=1: a one-GPU check of the path).
        self.sharded = world > 1 if sharded is None else sharded

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @staticmethod
    def single() -> "Dist":
        return Dist()

    @staticmethod
    def from_env() -> "Dist":
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world <= 1 and os.environ.get("REINS_FSDP") != "1":
            return Dist.single()
        if not torch.cuda.is_available():
            raise SystemExit("WORLD_SIZE > 1 or REINS_FSDP=1 needs CUDA: the FSDP trainer runs on GPUs only")
        import torch.distributed as td

        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        td.init_process_group("nccl")
        return Dist(td.get_rank(), td.get_world_size(), local, sharded=True)

    # ---- model ---------------------------------------------------------------------------
    def wrap(self, policy: torch.nn.Module) -> torch.nn.Module:
        if not self.sharded:
            return policy
        import functools

        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        from .model import DecoderLayer

        try:
            from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

            auto = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={DecoderLayer})
            return FSDP(policy, auto_wrap_policy=auto, device_id=torch.cuda.current_device())
        except Exception:  # older FSDP: one unit for the whole model
            return FSDP(policy, device_id=torch.cuda.current_device())

    def clip_grad_norm(self, model: torch.nn.Module, max_norm: float) -> torch.Tensor:
        if self.sharded:
            return model.clip_grad_norm_(max_norm)
        return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

    def full_state_dict(self, model: torch.nn.Module, policy) -> Dict[str, torch.Tensor]:
        if not self.sharded:
            return policy.policy_state_dict()
        from torch.distributed.fsdp import FullStateDictConfig, StateDictType
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
            sd = model.state_dict()
        sd = {k.replace("_fsdp_wrapped_module.", ""): v for k, v in sd.items()}
        sd = {k: v for k, v in sd.items() if not k.startswith("value_head.")}
        if policy.config.tie_word_embeddings:
            sd.pop("lm_head.weight", None)
        return sd

    def checkpoint_state(self, model, policy, optimizer) -> Dict[str, Any]:
        if not self.sharded:
            return {"model": policy.state_dict(), "optimizer": optimizer.state_dict()}
        from torch.distributed.fsdp import FullStateDictConfig, StateDictType
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
            return {"model": model.state_dict(), "optimizer": FSDP.full_optim_state_dict(model, optimizer)}

    def load_checkpoint_state(self, model, policy, optimizer, state: Dict[str, Any]) -> None:
        if not self.sharded:
            policy.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            return
        from torch.distributed.fsdp import FullStateDictConfig, StateDictType
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(rank0_only=False)):
            model.load_state_dict(state["model"])
        osd = FSDP.shard_full_optim_state_dict(state["optimizer"], model)
        optimizer.load_state_dict(osd)

    # ---- collectives ---------------------------------------------------------------------
    def max_int(self, x: int) -> int:
        if self.world == 1:
            return x
        import torch.distributed as td

        t = torch.tensor([x], device="cuda")
        td.all_reduce(t, op=td.ReduceOp.MAX)
        return int(t.item())

    def sum_int(self, x: int) -> int:
        if self.world == 1:
            return x
        import torch.distributed as td

        t = torch.tensor([x], device="cuda", dtype=torch.long)
        td.all_reduce(t)
        return int(t.item())

    def reduce_stats(self, sums: Dict[str, float]) -> Dict[str, float]:
        """Sum over ranks (max/min for the weight extremes); keys are in a fixed order on every rank."""
        if self.world == 1:
            return sums
        import torch.distributed as td

        keys = sorted(sums)
        objs: list = [None] * self.world
        td.all_gather_object(objs, {k: sums[k] for k in keys})
        out: Dict[str, float] = {}
        for d in objs:
            for k, v in d.items():
                if k == "w_max":
                    out[k] = max(out.get(k, v), v)
                elif k == "w_min":
                    out[k] = min(out.get(k, v), v)
                else:
                    out[k] = out.get(k, 0.0) + v
        return out

    def dummy_backward(self, model, device) -> None:
        """A rank with fewer micro-batches joins the collectives with a zero-weighted forward."""
        ids = torch.zeros((1, 1), dtype=torch.long, device=device)
        out = model(ids, ids, None)
        (out.sum() * 0.0).backward()

    def broadcast(self, obj: Any) -> Any:
        """Rank 0's command reaches every rank (the HTTP server lives on rank 0)."""
        if self.world == 1:
            return obj
        import torch.distributed as td

        box = [obj]
        td.broadcast_object_list(box, src=0)
        return box[0]
