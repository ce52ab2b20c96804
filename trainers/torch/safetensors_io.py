"""The safetensors file format, written and read without the safetensors package.

Layout: 8-byte little-endian header length N, N bytes of JSON header (padded with spaces to a
multiple of 8), then the raw little-endian tensor bytes. The header maps each tensor name to
{dtype, shape, data_offsets: [begin, end]} (offsets relative to the end of the header) and may
carry "__metadata__" (string to string).
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
from typing import Dict, Optional, Tuple

import numpy as np
import torch

_DTYPES = {
    torch.float64: ("F64", np.float64), torch.float32: ("F32", np.float32), torch.float16: ("F16", np.float16),
    torch.bfloat16: ("BF16", np.int16),  # numpy has no bfloat16: the raw 16-bit patterns travel as int16
    torch.int64: ("I64", np.int64), torch.int32: ("I32", np.int32), torch.bool: ("BOOL", np.bool_),
}
_BY_NAME = {name: (dt, np_dt) for dt, (name, np_dt) in _DTYPES.items()}


def encode(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """Serialize tensors (sorted by name, so equal weights give equal bytes)."""
    header: Dict[str, object] = {}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        if t.dtype not in _DTYPES:
            raise ValueError(f"tensor {name} has dtype {t.dtype}, which this writer does not handle")
        code, np_dt = _DTYPES[t.dtype]
        raw_t = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
        data = raw_t.numpy().astype(np.dtype(np_dt).newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(chunks)


def decode(data: bytes) -> Tuple[Dict[str, torch.Tensor], Dict[str, str]]:
    if len(data) < 8:
        raise ValueError("not a safetensors file: shorter than 8 bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError("not a safetensors file: the header length exceeds the file")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    base = 8 + n
    meta = header.pop("__metadata__", {}) or {}
    out: Dict[str, torch.Tensor] = {}
    for name, info in header.items():
        dt, np_dt = _BY_NAME[info["dtype"]]
        b, e = info["data_offsets"]
        arr = np.frombuffer(data, dtype=np.dtype(np_dt).newbyteorder("<"), count=(e - b) // np.dtype(np_dt).itemsize,
                            offset=base + b)
        t = torch.from_numpy(arr.astype(np_dt).reshape(info["shape"]).copy())
        out[name] = t.view(torch.bfloat16) if dt == torch.bfloat16 else t
    return out, meta


def content_version(data: bytes) -> str:
    """The weights version: the first 16 hex digits of the sha256 of the safetensors bytes."""
    return hashlib.sha256(data).hexdigest()[:16]


def save(path: str, tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    data = encode(tensors, metadata)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return data


def load(path: str) -> Tuple[Dict[str, torch.Tensor], Dict[str, str]]:
    with open(path, "rb") as f:
        return decode(f.read())
