# Shared by scripts/install-python.sh and scripts/install-metrics-python.sh (sourced, not run):
# uv pinned in its own venv, then a venv made from pinned requirements, stamped last so an
# interrupted install is made again. The caller sets NAME (its log prefix) before sourcing.
# Env: REINS_UV_CACHE (default ~/.cache/uv), REINS_PYTHON_BASE (the interpreter the venvs are made
# from, default python3).
UV_VERSION=0.13.9
UV_HOME="$HOME/.cache/reins/uv-$UV_VERSION"
BASE="${REINS_PYTHON_BASE:-python3}"
export UV_CACHE_DIR="${REINS_UV_CACHE:-$HOME/.cache/uv}"

# venv_is_current VENV STAMP: true when VENV has a python and its stamp is STAMP.
venv_is_current() {
  [ -x "$1/bin/python" ] && [ "$(cat "$1/.reins-stamp" 2>/dev/null)" = "$2" ]
}

# make_venv VENV REQUIREMENTS: uv (installed if missing), then a fresh VENV with REQUIREMENTS.
# Sets $uv for further installs into it; the caller checks its imports and calls stamp_venv.
make_venv() {
  command -v "$BASE" >/dev/null || { echo "$NAME: $BASE not found (set REINS_PYTHON_BASE to a Python 3.11)" >&2; exit 1; }
  if [ ! -x "$UV_HOME/bin/uv" ] || [ "$("$UV_HOME/bin/uv" --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
    echo "$NAME: uv $UV_VERSION into $UV_HOME" >&2
    rm -rf "$UV_HOME"
    "$BASE" -m venv "$UV_HOME"
    "$UV_HOME/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION"
  fi
  uv="$UV_HOME/bin/uv"
  echo "$NAME: $1 (cache $UV_CACHE_DIR)" >&2
  rm -rf "$1"
  "$uv" venv -q -p "$(command -v "$BASE")" "$1"
  "$uv" pip install -q --python "$1/bin/python" -r "$2"
}

# stamp_venv VENV STAMP: mark VENV complete.
stamp_venv() {
  echo "$2" > "$1/.reins-stamp"
}
