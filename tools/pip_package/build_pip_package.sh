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
# the wheel must carry every patched file
for patch in "$root"/patches/*.diff; do
  target=$(sed -n 's|^+++ b/\(.*\)$|\1|p' "$patch")
  "$python" -c "import sys, zipfile; names = zipfile.ZipFile(sys.argv[1]).namelist(); \
sys.exit(0 if 'tensorboard_bundle/_patched/' + sys.argv[2] in names else 'missing ' + sys.argv[2])" \
    "$wheel" "$(basename "$target")"
done
echo "$wheel"
