"""Reads back what the metric sinks of a run wrote, as JSON on stdout, for test/metrics tests:
  {"tensorboard": {tag: [[step, value], ...]}, "wandb": {"runs": N, "history": [{"_step": N, key: value, ...}]}}
TensorBoard through tensorboard's own reader (EventAccumulator); W&B by reading the offline run's
.wandb file (the LevelDB log format of W&B's transaction log) and parsing its records with the
SDK's protobuf classes.

  python read_sinks.py RUN_DIR
"""

import glob
import json
import os
import struct
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def tensorboard_scalars(run_dir):
    acc = EventAccumulator(os.path.join(run_dir, "tensorboard"), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


BLOCK = 32768
HEADER = 7  # ":W&B" + magic (2 bytes) + version (1 byte)


def wandb_records(path):
    """The records of a .wandb file: 32 KiB blocks of chunks (crc32, length, type: 1 full, 2 first, 3 middle, 4 last)."""
    data = open(path, "rb").read()
    assert data[:4] == b":W&B", "not a .wandb file"
    pos, pending = HEADER, b""
    while pos + 7 <= len(data):
        left = BLOCK - (pos % BLOCK)
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 0 and length == 0:
            continue
        if kind == 1:
            yield chunk
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            yield pending + chunk
            pending = b""


def wandb_history(run_dir):
    from wandb.proto import wandb_internal_pb2 as pb

    files = sorted(glob.glob(os.path.join(run_dir, "wandb", "offline-run-*", "run-*.wandb")))
    history = []
    for f in files:
        for raw in wandb_records(f):
            rec = pb.Record()
            rec.ParseFromString(raw)
            if rec.WhichOneof("record_type") == "history":
                history.append({(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in rec.history.item})
    return {"runs": len(files), "history": history}


if __name__ == "__main__":
    run_dir = sys.argv[1]
    print(json.dumps({"tensorboard": tensorboard_scalars(run_dir), "wandb": wandb_history(run_dir)}))
