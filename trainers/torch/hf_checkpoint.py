"""Model directories: the project's own small policy, or a Hugging Face Qwen3 checkpoint.

A Hugging Face directory holds config.json (transformers 5.x writes `dtype` and `rope_parameters`,
4.x wrote `torch_dtype`, `rope_theta` and `rope_scaling`: both are read) and its weights in
`model.safetensors` or in shards `model-0000x-of-0000y.safetensors` listed by
`model.safetensors.index.json`, in bfloat16, float16 or float32. The worker trains in float32; the
checkpoint's dtype and layout are recorded so that save_weights writes the same layout back
(same config keys, same dtype, shards plus index) for vLLM or SGLang to load.

A directory is the project's own when its config.json carries `special_tokens` (written by
PolicyConfig.to_hf); it is then read and written exactly as before, with the project's codec.
Files are read and written with the `safetensors` package when it is importable, else with the
project's codec (safetensors_io.py); both give the same tensors and the same bytes layout rules.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import torch

from . import safetensors_io
from .batch import BatchProblem
from .model import PolicyConfig

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_HINT = "this trainer implements Qwen3ForCausalLM (full attention, default RoPE, no biases); use such a checkpoint"


@dataclass
class Layout:
    """How a model directory stores its weights, so they are written back the same way."""
    kind: str                                    # "reins" (the project's own) or "hf"
    dtype: str = "float32"                       # the checkpoint's dtype (weights are trained in float32)
    hf_config: Dict[str, Any] = field(default_factory=dict)
    files: List[str] = field(default_factory=lambda: [SINGLE])
    weight_map: Optional[Dict[str, str]] = None  # tensor name -> shard file, for a sharded source


def _library():
    try:
        import safetensors.torch as st  # the scale environment has it; Debian's python does not
        return st
    except ImportError:
        return None


def read_file(path: str, own: bool = False) -> Dict[str, torch.Tensor]:
    """One safetensors file's tensors (the project's own directories: always with its codec)."""
    st = None if own else _library()
    if st is not None:
        return st.load_file(path)
    return safetensors_io.load(path)[0]


def encode_file(tensors: Dict[str, torch.Tensor], metadata: Dict[str, str], own: bool) -> bytes:
    """One safetensors file's bytes. The project's own directories always use its codec (their
    version hashes stay what they were); Hugging Face layouts use the library when present."""
    st = None if own else _library()
    if st is None:
        return safetensors_io.encode(tensors, metadata)
    return st.save({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, metadata)


def _refuse(field_name: str, value: Any, why: str) -> BatchProblem:
    return BatchProblem("UnsupportedCheckpoint", f"config.json: `{field_name}` is {json.dumps(value)}: {why}", _HINT)


def _bad(message: str, hint: str) -> BatchProblem:
    return BatchProblem("BadCheckpoint", message, hint)


def _rope_theta(c: Dict[str, Any]) -> float:
    rp = c.get("rope_parameters")
    if isinstance(rp, dict) and "full_attention" in rp and isinstance(rp["full_attention"], dict):
        rp = rp["full_attention"]
    if isinstance(rp, dict):
        kind = rp.get("rope_type", rp.get("type", "default"))
        if kind != "default":
            raise _refuse("rope_parameters.rope_type", kind, "only the default RoPE is implemented (no scaling)")
        if "rope_theta" in rp:
            return float(rp["rope_theta"])
    scaling = c.get("rope_scaling")
    if scaling:
        kind = scaling.get("rope_type", scaling.get("type")) if isinstance(scaling, dict) else scaling
        if kind != "default":
            raise _refuse("rope_scaling", scaling, "RoPE scaling is not implemented")
    return float(c.get("rope_theta", 10000.0))


def config_from_hf(c: Dict[str, Any]) -> PolicyConfig:
    """PolicyConfig from a Hugging Face Qwen3 config.json; refuses what the model does not implement."""
    archs = c.get("architectures") or []
    if c.get("model_type") != "qwen3" and "Qwen3ForCausalLM" not in archs:
        raise _refuse("model_type", c.get("model_type"), "not a Qwen3 causal LM")
    for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"):
        if not isinstance(c.get(name), int) or c[name] <= 0:
            raise _bad(f"config.json: `{name}` is missing or not a positive integer", "this is not a complete Qwen3 config")
    checks = [
        ("hidden_act", c.get("hidden_act", "silu") == "silu", "only the SiLU (SwiGLU) MLP is implemented"),
        ("attention_bias", not c.get("attention_bias", False), "attention biases are not implemented"),
        ("mlp_bias", not c.get("mlp_bias", False), "MLP biases are not implemented"),
        ("use_sliding_window", not c.get("use_sliding_window", False), "sliding-window attention is not implemented"),
        ("layer_types", all(t == "full_attention" for t in (c.get("layer_types") or [])),
         "only full attention layers are implemented"),
        ("attention_dropout", not c.get("attention_dropout", 0.0), "attention dropout is not implemented"),
        ("quantization_config", not c.get("quantization_config"), "quantized weights are not implemented"),
    ]
    for name, ok, why in checks:
        if not ok:
            raise _refuse(name, c.get(name), why)
    dtype = c.get("dtype") or c.get("torch_dtype") or "float32"
    if dtype not in DTYPES:
        raise _refuse("dtype", dtype, f"weights must be one of {', '.join(DTYPES)}")
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or heads
    if heads % kv:
        raise _bad(f"config.json: {heads} attention heads are not a multiple of {kv} key/value heads",
                   "num_attention_heads must be a multiple of num_key_value_heads")
    return PolicyConfig(
        vocab_size=c["vocab_size"], hidden_size=c["hidden_size"], num_hidden_layers=c["num_hidden_layers"],
        num_attention_heads=heads, num_key_value_heads=kv, head_dim=c.get("head_dim") or c["hidden_size"] // heads,
        intermediate_size=c["intermediate_size"], rope_theta=_rope_theta(c), rms_norm_eps=float(c.get("rms_norm_eps", 1e-6)),
        tie_word_embeddings=bool(c.get("tie_word_embeddings", False)),
        max_position_embeddings=int(c.get("max_position_embeddings", 8192)),
        initializer_range=float(c.get("initializer_range", 0.02)))


def _read_index(model_dir: str) -> Dict[str, str]:
    path = os.path.join(model_dir, INDEX)
    try:
        with open(path, "r", encoding="utf-8") as f:
            wm = json.load(f)["weight_map"]
        assert isinstance(wm, dict) and all(isinstance(v, str) for v in wm.values())
    except (OSError, ValueError, KeyError, TypeError, AssertionError) as e:
        raise _bad(f"{path} is not a safetensors index ({type(e).__name__})",
                   "it must be JSON with a `weight_map` from tensor names to shard files")
    for name in sorted(set(wm.values())):
        if os.path.basename(name) != name or not os.path.exists(os.path.join(model_dir, name)):
            raise _bad(f"{INDEX} names the shard {name}, which is not in {model_dir}",
                       "copy the checkpoint completely (every shard the index lists)")
    return wm


def read_layout(model_dir: str) -> Tuple[PolicyConfig, Layout]:
    cfg_path = os.path.join(model_dir, "config.json")
    if not os.path.exists(cfg_path):
        raise BatchProblem("ModelNotFound", f"{model_dir} has no config.json",
                           "create a model with `python3 -m trainers.torch.init_model --out DIR`, "
                           "or give a Hugging Face Qwen3 checkpoint directory")
    try:
        with open(cfg_path, "r", encoding="utf-8") as f:
            raw = json.load(f)
        assert isinstance(raw, dict)
    except (ValueError, AssertionError):
        raise _bad(f"{cfg_path} is not a JSON object", "write config.json as the checkpoint's tools do")
    if "special_tokens" in raw:  # the project's own model directory: read exactly as before
        return PolicyConfig.from_dict(raw), Layout(kind="reins")
    cfg = config_from_hf(raw)
    dtype = raw.get("dtype") or raw.get("torch_dtype") or "float32"
    if os.path.exists(os.path.join(model_dir, INDEX)):
        wm = _read_index(model_dir)
        return cfg, Layout(kind="hf", dtype=dtype, hf_config=raw, files=sorted(set(wm.values())), weight_map=wm)
    if not os.path.exists(os.path.join(model_dir, SINGLE)):
        raise _bad(f"{model_dir} has neither {SINGLE} nor {INDEX}", "save the checkpoint with safetensors weights")
    return cfg, Layout(kind="hf", dtype=dtype, hf_config=raw)


def read_weights(model_dir: str, layout: Layout) -> Dict[str, torch.Tensor]:
    """All tensors, float32 for a Hugging Face layout (the project's own are float32 already)."""
    sd: Dict[str, torch.Tensor] = {}
    for name in layout.files:
        path = os.path.join(model_dir, name)
        if not os.path.exists(path):
            raise BatchProblem("ModelNotFound", f"{model_dir} has no {name}", "a model directory needs its weights")
        try:
            tensors = read_file(path, own=layout.kind == "reins")
        except Exception as e:  # a truncated or foreign file: the codec or the library says why
            raise _bad(f"{path} is not a readable safetensors file: {e}", "copy the checkpoint again")
        if layout.weight_map is not None:
            tensors = {k: v for k, v in tensors.items() if layout.weight_map.get(k) == name}
        sd.update(tensors)
    if layout.weight_map is not None:
        missing = sorted(set(layout.weight_map) - set(sd))
        if missing:
            raise _bad(f"{INDEX} maps {missing[0]} to {layout.weight_map[missing[0]]}, which does not hold it",
                       "the index and the shards do not belong together; copy the checkpoint again")
    if layout.kind == "hf":
        sd = {k: v.float() if v.is_floating_point() else v for k, v in sd.items()}
    return sd


def content_version(model_dir: str, layout: Layout) -> str:
    """The weights version: sha256 of the weight files' bytes, in file order (one file: its hash)."""
    h = hashlib.sha256()
    for name in layout.files:
        with open(os.path.join(model_dir, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def _shards(sd: Dict[str, torch.Tensor], layout: Layout, max_bytes: Optional[int]) -> List[Dict[str, torch.Tensor]]:
    """The source's own assignment of tensors to shards, or (with a limit) greedily in name order."""
    if not max_bytes and layout.weight_map is not None:
        groups: Dict[str, Dict[str, torch.Tensor]] = {}
        for k in sorted(sd):
            groups.setdefault(layout.weight_map.get(k, layout.files[-1]), {})[k] = sd[k]
        return [groups[f] for f in sorted(groups)]
    out: List[Dict[str, torch.Tensor]] = [{}]
    size = 0
    for k in sorted(sd):
        n = sd[k].numel() * sd[k].element_size()
        if max_bytes and out[-1] and size + n > max_bytes:
            out.append({})
            size = 0
        out[-1][k] = sd[k]
        size += n
    return out


def encode_weights(sd: Dict[str, torch.Tensor], layout: Layout, metadata: Dict[str, str],
                   max_shard_bytes: Optional[int] = None) -> Tuple[str, Dict[str, bytes]]:
    """(version, {file name: bytes}) in the layout's dtype and sharding; the index among the files."""
    own = layout.kind == "reins"
    if not own:
        sd = {k: v.detach().to(DTYPES[layout.dtype]) if v.is_floating_point() else v for k, v in sd.items()}
    shards = [sd] if own else _shards(sd, layout, max_shard_bytes)
    files: Dict[str, bytes] = {}
    if len(shards) == 1:
        files[SINGLE] = encode_file(shards[0], metadata, own)
    else:
        weight_map: Dict[str, str] = {}
        for i, part in enumerate(shards):
            name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            files[name] = encode_file(part, metadata, own)
            weight_map.update({k: name for k in part})
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(files[name])
    if len(shards) > 1:
        total = sum(v.numel() * v.element_size() for v in sd.values())
        files[INDEX] = json.dumps({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))},
                                  indent=2).encode("utf-8")
    return h.hexdigest()[:16], files


def hf_config_out(cfg: PolicyConfig, layout: Layout) -> Dict[str, Any]:
    """The source's config.json, its dtype key(s) naming the checkpoint's dtype."""
    out = dict(layout.hf_config)
    keys = [k for k in ("dtype", "torch_dtype") if k in out] or ["dtype"]
    for k in keys:
        out[k] = layout.dtype
    out["vocab_size"] = cfg.vocab_size
    return out
