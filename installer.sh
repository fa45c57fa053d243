#!/usr/bin/env bash
# One-shot set-up of mxboard and its bundled TensorBoard. Needs python3 with pip, and no root
# (into a venv, or wherever that python3 installs).
#   ./installer.sh                  build the wheel and install it (with its dependencies)
#   ./installer.sh --offline DIR    install from a wheelhouse (make wheelhouse), no index at all
# The interpreter is $PYTHON (default: python3); use a virtualenv's python to install into it.
set -euo pipefail
root="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"
if [ "${1:-}" = "--offline" ]; then
  wheelhouse="${2:?usage: installer.sh --offline WHEELHOUSE_DIR}"
  exec "$python" -m pip install --no-index --find-links "$wheelhouse" mxboard
fi
wheel=$(PYTHON="$python" "$root/tools/pip_package/build_pip_package.sh" "$root/dist" | tail -n 1)
"$python" -m pip install "$wheel"
"$python" -m pip install -q --force-reinstall --no-deps "$wheel"  # this build, even if the version was installed
echo "installed $wheel: run 'tensorboard --logdir DIR'"
