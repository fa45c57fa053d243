#!/usr/bin/env bash
# Build dist/mxboard-<version>-py3-none-any.whl: the logger, and the TensorBoard launcher with the
# upstream files of patches/ vendored and patched (the build fails if a patch no longer applies).
#   tools/pip_package/build_pip_package.sh [DIST_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dist="${1:-$root/dist}"
python="${PYTHON:-python3}"
mkdir -p "$dist"
"$python" -m pip wheel --no-deps --wheel-dir "$dist" "$root"
wheel=$(ls -t "$dist"/mxboard-*-py3-none-any.whl | head -n 1)
"$python" "$root/tools/pip_package/vendor.py" --check "$wheel" >&2  # every patched file, as patched
echo "$wheel"
