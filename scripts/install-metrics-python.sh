#!/usr/bin/env bash
# Installs the metrics Python environment: a small venv with tensorboardX, tensorboard and wandb
# (pinned in scripts/metrics-python.txt), from which `reins run` writes TensorBoard event files and
# W&B offline runs when an Experiment's spec.metrics asks (trainers/metrics/sink.py). ~210 MB.
# Idempotent: a venv whose stamp matches the requirements is left alone.
#   scripts/install-metrics-python.sh            install (or check) the environment
#   scripts/install-metrics-python.sh --print    print the environment's python path and exit
# Env: REINS_METRICS_PYTHON_DIR (default ~/.cache/reins/metrics-python; reins reads the
# interpreter from REINS_METRICS_PYTHON, default <that dir>/bin/python), and scripts/venv-lib.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=install-metrics-python
. scripts/venv-lib.sh

REQUIREMENTS=scripts/metrics-python.txt
VENV="${REINS_METRICS_PYTHON_DIR:-$HOME/.cache/reins/metrics-python}"

if [ "${1:-}" = "--print" ]; then echo "$VENV/bin/python"; exit 0; fi

stamp="$(sha256sum < "$REQUIREMENTS" | cut -c1-16)"
if venv_is_current "$VENV" "$stamp"; then
  echo "$NAME: $VENV is up to date" >&2
  exit 0
fi

start=$(date +%s)
make_venv "$VENV" "$REQUIREMENTS"
"$VENV/bin/python" -c "import tensorboardX, tensorboard, wandb; print('install-metrics-python: tensorboardX', tensorboardX.__version__, 'tensorboard', tensorboard.__version__, 'wandb', wandb.__version__)" >&2
stamp_venv "$VENV" "$stamp"
echo "$NAME: done in $(( $(date +%s) - start )) s" >&2
