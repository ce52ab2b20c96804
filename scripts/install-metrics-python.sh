#!/usr/bin/env bash
# Installs the metrics Python environment: a small venv with tensorboardX, tensorboard and wandb
# (pinned in scripts/metrics-python.txt), from which `reins run` writes TensorBoard event files and
# W&B offline runs when an Experiment's spec.metrics asks (trainers/metrics/sink.py). ~210 MB.
# Idempotent: a venv whose stamp matches the requirements is left alone.
#   scripts/install-metrics-python.sh            install (or check) the environment
#   scripts/install-metrics-python.sh --print    print the environment's python path and exit
# Env: REINS_METRICS_PYTHON_DIR (default ~/.cache/reins/metrics-python; reins reads the
# interpreter from REINS_METRICS_PYTHON, default <that dir>/bin/python), REINS_UV_CACHE (default
# ~/.cache/uv), REINS_PYTHON_BASE (the interpreter the venv is made from, default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION=0.13.9
REQUIREMENTS=scripts/metrics-python.txt
VENV="${REINS_METRICS_PYTHON_DIR:-$HOME/.cache/reins/metrics-python}"
UV_HOME="$HOME/.cache/reins/uv-$UV_VERSION"
BASE="${REINS_PYTHON_BASE:-python3}"
export UV_CACHE_DIR="${REINS_UV_CACHE:-$HOME/.cache/uv}"

if [ "${1:-}" = "--print" ]; then echo "$VENV/bin/python"; exit 0; fi

stamp="$(sha256sum < "$REQUIREMENTS" | cut -c1-16)"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.reins-stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "install-metrics-python: $VENV is up to date" >&2
  exit 0
fi

command -v "$BASE" >/dev/null || { echo "install-metrics-python: $BASE not found (set REINS_PYTHON_BASE to a Python 3.11)" >&2; exit 1; }
start=$(date +%s)
if [ ! -x "$UV_HOME/bin/uv" ] || [ "$("$UV_HOME/bin/uv" --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
  echo "install-metrics-python: uv $UV_VERSION into $UV_HOME" >&2
  rm -rf "$UV_HOME"
  "$BASE" -m venv "$UV_HOME"
  "$UV_HOME/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION"
fi
uv="$UV_HOME/bin/uv"

echo "install-metrics-python: $VENV (cache $UV_CACHE_DIR)" >&2
# The stamp is written last: a venv without it (an interrupted install) is made again.
rm -rf "$VENV"
"$uv" venv -q -p "$(command -v "$BASE")" "$VENV"
"$uv" pip install -q --python "$VENV/bin/python" -r "$REQUIREMENTS"
"$VENV/bin/python" -c "import tensorboardX, tensorboard, wandb; print('install-metrics-python: tensorboardX', tensorboardX.__version__, 'tensorboard', tensorboard.__version__, 'wandb', wandb.__version__)" >&2
echo "$stamp" > "$VENV/.reins-stamp"
echo "install-metrics-python: done in $(( $(date +%s) - start )) s" >&2
