#!/usr/bin/env bash
# Build dist/mxboard-<version>-py3-none-any.whl: the logger, and the TensorBoard launcher with the
# upstream files of patches/ vendored and patched. pip builds it in an isolated environment with
# what [build-system] lists (TensorBoard included); the build fails if a patch no longer applies.
# Prints the wheel's path on its last line.
#   tools/pip_package/build_pip_package.sh [DIST_DIR]      (the interpreter: $PYTHON, or python3)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dist="${1:-$root/dist}"
python="${PYTHON:-python3}"
mkdir -p "$dist"
"$python" -m pip wheel -q --no-deps --wheel-dir "$dist" "$root" >&2
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$root/python/mxboard/__init__.py")
echo "$dist/mxboard-$version-py3-none-any.whl"
