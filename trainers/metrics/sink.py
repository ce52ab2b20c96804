"""The metric sinks of `reins run` (src/runtime/metrics/sink.ts starts this process).

Reads one JSON object per line on stdin, {"step": N, "scalars": {"reward/mean": 0.5, ...}}, and
logs the scalars at global step N to TensorBoard event files (tensorboardX's SummaryWriter) and/or
a W&B run in offline mode (files only, nothing sent). Prints {"ready": true} once the writers are
open, {"closed": true} after stdin ends and everything is flushed. A missing package is reported
as {"error": "missing", "module": NAME} and exit code 3.

  python -m trainers.metrics.sink [--tensorboard DIR] [--wandb-dir DIR --wandb-project P --wandb-name N --wandb-id ID]

W&B writes its offline run under DIR/wandb/offline-run-*/ (`wandb sync` uploads it).
"""

import argparse
import json
import os
import sys


def _say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _open_tensorboard(logdir):
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        _say({"error": "missing", "module": "tensorboardX"})
        sys.exit(3)
    os.makedirs(logdir, exist_ok=True)
    # flush_secs: a running run's curves show up in TensorBoard within seconds.
    return SummaryWriter(logdir=logdir, flush_secs=5)


def _open_wandb(args):
    # Offline: the SDK writes run files under the directory and never connects.
    os.environ["WANDB_MODE"] = "offline"
    os.environ.setdefault("WANDB_SILENT", "true")
    os.environ.setdefault("WANDB_DISABLE_GIT", "true")
    os.environ.setdefault("WANDB_DISABLE_CODE", "true")
    try:
        import wandb
    except ImportError:
        _say({"error": "missing", "module": "wandb"})
        sys.exit(3)
    os.makedirs(args.wandb_dir, exist_ok=True)
    return wandb.init(
        project=args.wandb_project,
        name=args.wandb_name,
        id=args.wandb_id,
        resume="allow",
        dir=args.wandb_dir,
        mode="offline",
        settings=wandb.Settings(silent=True, console="off", x_disable_stats=True),
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tensorboard")
    p.add_argument("--wandb-dir")
    p.add_argument("--wandb-project")
    p.add_argument("--wandb-name")
    p.add_argument("--wandb-id")
    args = p.parse_args()
    tb = _open_tensorboard(args.tensorboard) if args.tensorboard else None
    run = _open_wandb(args) if args.wandb_dir else None
    _say({"ready": True})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        step = int(msg["step"])
        scalars = {k: float(v) for k, v in msg["scalars"].items()}
        if tb is not None:
            for tag, value in scalars.items():
                tb.add_scalar(tag, value, global_step=step, walltime=msg.get("wallTime"))
            tb.flush()
        if run is not None:
            run.log(scalars, step=step)
    if tb is not None:
        tb.close()
    if run is not None:
        run.finish()
    _say({"closed": True})


if __name__ == "__main__":
    main()
