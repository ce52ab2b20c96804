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
    torch.int64: ("I64", np.int64), torch.int32: ("I32", np.int32), torch.int16: ("I16", np.int16),
    torch.int8: ("I8", np.int8), torch.uint8: ("U8", np.uint8), torch.bool: ("BOOL", np.bool_),
}
_BY_NAME = {name: (dt, np_dt) for dt, (name, np_dt) in _DTYPES.items()}


def _raw(t: torch.Tensor) -> bytes:
    """A tensor's little-endian bytes (bfloat16 as its raw 16-bit patterns)."""
    _, np_dt = _DTYPES[t.dtype]
    raw_t = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
    return raw_t.numpy().astype(np.dtype(np_dt).newbyteorder("<"), copy=False).tobytes()


def _prepare(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]]):
    """The file's first bytes (header length and padded JSON header) and its tensors in file order
    (sorted by name, so equal weights give equal bytes), on the CPU and contiguous."""
    header: Dict[str, object] = {}
    items = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        if t.dtype not in _DTYPES:
            raise ValueError(f"tensor {name} has dtype {t.dtype}, which this writer does not handle")
        size = t.numel() * t.element_size()
        header[name] = {"dtype": _DTYPES[t.dtype][0], "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        items.append((name, t))
        offset += size
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw, items


def encode(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """Serialize tensors (sorted by name, so equal weights give equal bytes)."""
    head, items = _prepare(tensors, metadata)
    return head + b"".join(_raw(t) for _, t in items)


def _bad(why: str) -> ValueError:
    return ValueError(f"not a safetensors file: {why}")


def decode(data: bytes) -> Tuple[Dict[str, torch.Tensor], Dict[str, str]]:
    """The tensors and metadata of a safetensors file's bytes. Only data is read (no code runs);
    a header that does not describe the bytes that follow it is a ValueError."""
    if len(data) < 8:
        raise _bad("shorter than 8 bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise _bad("the header length exceeds the file")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _bad(f"the header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise _bad("the header is not a JSON object")
    base = 8 + n
    meta = header.pop("__metadata__", {}) or {}
    if not isinstance(meta, dict):
        raise _bad("__metadata__ is not an object")
    out: Dict[str, torch.Tensor] = {}
    for name, info in header.items():
        if not isinstance(info, dict) or info.get("dtype") not in _BY_NAME:
            raise _bad(f"tensor {name!r} has no dtype this reader knows")
        dt, np_dt = _BY_NAME[info["dtype"]]
        shape, offsets = info.get("shape"), info.get("data_offsets")
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            raise _bad(f"tensor {name!r} has a malformed shape")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets):
            raise _bad(f"tensor {name!r} has malformed data_offsets")
        b, e = offsets
        count = 1
        for d in shape:
            count *= d
        if b < 0 or e - b != count * np.dtype(np_dt).itemsize or base + e > len(data):
            raise _bad(f"tensor {name!r}'s data_offsets do not fit its shape and the file")
        arr = np.frombuffer(data, dtype=np.dtype(np_dt).newbyteorder("<"), count=count, offset=base + b)
        t = torch.from_numpy(arr.astype(np_dt).reshape(shape).copy())
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


def write(path: str, tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> None:
    """The same bytes as `save`, written a tensor at a time (no copy of the whole file in memory);
    through a temporary file and a rename."""
    head, items = _prepare(tensors, metadata)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(head)
        for _, t in items:
            f.write(_raw(t))
    os.replace(tmp, path)


def load(path: str) -> Tuple[Dict[str, torch.Tensor], Dict[str, str]]:
    with open(path, "rb") as f:
        return decode(f.read())
