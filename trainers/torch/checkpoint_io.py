"""Trainer checkpoints as safetensors and JSON: data only, never pickle.

A checkpoint directory (written by Trainer.checkpoint through a temporary directory and a rename):

  checkpoint.json      {"format": 2, "step", "weightsVersion", "protocolVersion", "lr",
                        "optimizer": {"state": [{"key", "tensors": [names], "values": {...}}, ...],
                                      "param_groups": [{...}, ...]},
                        "files": {"model": "model.safetensors", "trainer": "trainer.safetensors"}}
  model.safetensors    the model's state dict (the policy, value head included), by its own names
  trainer.safetensors  the optimizer's per-parameter tensors (AdamW: step, exp_avg, exp_avg_sq) as
                       "optimizer.<i>.<name>" (i: the entry of checkpoint.json's optimizer.state),
                       and torch's CPU random state as "rng.torch" (uint8)

Everything that is not a tensor (the step counter, the weights version, the learning rate, the
param groups' settings, a state entry's non-tensor values) is JSON. Reading takes only these files:
safetensors (the `safetensors` package when importable, else safetensors_io.py) and json, so a
crafted checkpoint can hold wrong numbers but never runs code. A directory with `trainer.pt` (the
torch.save pickle older reins wrote) is refused with CheckpointFormatOutdated, not loaded.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Tuple

import torch

from . import safetensors_io
from .batch import BatchProblem

FORMAT = 2
SUMMARY = "checkpoint.json"
MODEL_FILE = "model.safetensors"
TRAINER_FILE = "trainer.safetensors"
LEGACY_FILE = "trainer.pt"
_RESTART_HINT = ("reins no longer loads pickles (torch.load runs code a crafted file brings): start a new run "
                 "(reins run SPECS --out NEW_DIR)")


def write(path: str, model: Dict[str, torch.Tensor], optimizer: Dict[str, Any], info: Dict[str, Any]) -> None:
    """Write a checkpoint into the (new, empty) directory `path`: the model's state dict, the
    optimizer's state dict (torch's layout: "state" by key, "param_groups") and `info` (JSON
    values: step, weightsVersion, protocolVersion, lr) plus torch's CPU random state."""
    entries: List[Dict[str, Any]] = []
    tensors: Dict[str, torch.Tensor] = {"rng.torch": torch.get_rng_state()}
    for i, (key, state) in enumerate(optimizer.get("state", {}).items()):
        names, values = [], {}
        for name, v in state.items():
            if isinstance(v, torch.Tensor):
                names.append(name)
                tensors[f"optimizer.{i}.{name}"] = v
            else:
                values[name] = _json_value(v, f"optimizer state {key!r}.{name}")
        entries.append({"key": _json_value(key, "optimizer state key"), "tensors": sorted(names), "values": values})
    groups = [{k: _json_value(v, f"param group {k}") for k, v in g.items()} for g in optimizer.get("param_groups", [])]
    safetensors_io.write(os.path.join(path, MODEL_FILE), {k: v for k, v in model.items()}, {"format": "reins-checkpoint"})
    safetensors_io.write(os.path.join(path, TRAINER_FILE), tensors, {"format": "reins-checkpoint"})
    summary = {"format": FORMAT, **info, "optimizer": {"state": entries, "param_groups": groups},
               "files": {"model": MODEL_FILE, "trainer": TRAINER_FILE}}
    with open(os.path.join(path, SUMMARY), "w", encoding="utf-8") as f:
        json.dump(summary, f, allow_nan=False)


def _json_value(v: Any, what: str) -> Any:
    """A non-tensor value as JSON (tuples become lists; betas come back as a tuple on reading)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, (list, tuple)):
        return [_json_value(x, what) for x in v]
    raise TypeError(f"{what} is a {type(v).__name__}, which a checkpoint does not store")


def _bad(path: str, why: str) -> BatchProblem:
    return BatchProblem("BadCheckpoint", f"the checkpoint at {path} is damaged: {why}",
                        "give a directory a /checkpoint call wrote, unchanged; or start a new run")


def check(path: str) -> Dict[str, Any]:
    """The summary of the checkpoint at `path`, or the refusal: CheckpointNotFound (no checkpoint
    there), CheckpointFormatOutdated (an older reins's trainer.pt pickle), BadCheckpoint."""
    if not path or not os.path.isdir(path):
        raise BatchProblem("CheckpointNotFound", f"no checkpoint at {path}", "give the directory a /checkpoint call returned")
    summary_file = os.path.join(path, SUMMARY)
    summary = None
    if os.path.isfile(summary_file):
        try:
            with open(summary_file, "r", encoding="utf-8") as f:
                summary = json.load(f)
        except (OSError, ValueError, RecursionError) as e:
            raise _bad(path, f"{SUMMARY} is not JSON ({e})") from None
    if not isinstance(summary, dict) or summary.get("format") != FORMAT:
        if os.path.exists(os.path.join(path, LEGACY_FILE)):
            raise BatchProblem("CheckpointFormatOutdated", f"the checkpoint at {path} was written by an older reins in "
                               f"pickle format ({LEGACY_FILE})", _RESTART_HINT)
        if summary is None:
            raise BatchProblem("CheckpointNotFound", f"no checkpoint at {path} (no {SUMMARY})",
                               "give the directory a /checkpoint call returned")
        raise _bad(path, f"{SUMMARY} has format {json.dumps(summary.get('format') if isinstance(summary, dict) else summary)}, "
                   f"not {FORMAT}")
    for name in (MODEL_FILE, TRAINER_FILE):
        if not os.path.isfile(os.path.join(path, name)):
            raise _bad(path, f"{name} is missing")
    return summary


def _read_tensors(path: str, name: str) -> Dict[str, torch.Tensor]:
    file = os.path.join(path, name)
    try:
        try:
            import safetensors.torch as st  # the scale environment's (memory-mapped); Debian's python has none
        except ImportError:
            return safetensors_io.load(file)[0]
        return st.load_file(file)
    except (OSError, ValueError, RuntimeError, KeyError, TypeError) as e:
        raise _bad(path, f"{name}: {e}") from None


def read_model(path: str) -> Dict[str, torch.Tensor]:
    """The model's state dict of the checkpoint at `path` (the KL reference), on the CPU."""
    check(path)
    return _read_tensors(path, MODEL_FILE)


def read(path: str) -> Dict[str, Any]:
    """The checkpoint at `path` in torch's layout: {"model", "optimizer", "step", "weightsVersion",
    "lr", "rng"}, its tensors on the CPU."""
    summary = check(path)
    model = _read_tensors(path, MODEL_FILE)
    tensors = _read_tensors(path, TRAINER_FILE)
    try:
        opt = summary["optimizer"]
        state: Dict[Any, Dict[str, Any]] = {}
        for i, entry in enumerate(opt["state"]):
            key = entry["key"]
            if not isinstance(key, (int, str)) or isinstance(key, bool):
                raise ValueError(f"optimizer state entry {i} has key {key!r}")
            values = dict(entry.get("values") or {})
            for name in entry["tensors"]:
                values[name] = tensors[f"optimizer.{i}.{name}"]
            state[key] = values
        groups: List[Dict[str, Any]] = []
        for g in opt["param_groups"]:
            if not isinstance(g, dict) or not isinstance(g.get("params"), list):
                raise ValueError("a param group without params")
            g = dict(g)
            if isinstance(g.get("betas"), list):
                g["betas"] = tuple(g["betas"])
            groups.append(g)
        step = summary["step"]
        if type(step) is not int or step < 0:
            raise ValueError(f"step is {step!r}")
        rng = tensors["rng.torch"]
        if rng.dtype != torch.uint8:
            raise ValueError("rng.torch is not uint8")
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise _bad(path, f"{SUMMARY} and {TRAINER_FILE} do not fit together ({type(e).__name__}: {e})") from None
    return {"model": model, "optimizer": {"state": state, "param_groups": groups}, "step": step,
            "weightsVersion": summary.get("weightsVersion"), "lr": summary.get("lr"), "rng": rng}

