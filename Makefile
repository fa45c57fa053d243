# make demo        train a Gluon CNN on bundled digits, log every summary kind, serve it
#                  (make demo SERVE=0 LOGDIR=DIR: into DIR, without serving)
# make test        set up .venv (idempotent) and run the test suite
# make bench       the hot-path benchmark, side by side with tensorboardX
# make wheel       dist/mxboard-<version>-py3-none-any.whl (logger + bundled TensorBoard launcher)
# make wheelhouse  dist/wheelhouse/: that wheel and every dependency, for offline installs
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH ?= 2.13.0
LOGDIR ?= runs/demo
SERVE ?= 1

.PHONY: setup demo test bench screenshots protos wheel wheelhouse clean

setup: $(STAMP)

$(STAMP): pyproject.toml setup.py
	# system tools: patch (the build applies patches/), iproute2 (network-namespace tests),
	# headless Chromium (screenshot tests); installed only where missing
	missing=""; command -v patch >/dev/null || missing="$$missing patch"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v chromium >/dev/null || missing="$$missing chromium fonts-dejavu-core"; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,demo]'
	# torch, for the tests that prove coexistence with torch.utils.tensorboard and DLPack input:
	# the CPU build where the machine offers one (never the multi-GB CUDA build from the index)
	if $(PY) -m pip download -q --no-deps --no-index -d $(VENV)/torch-wheel torch==$(TORCH) 2>/dev/null; then \
	    $(PY) -m pip install -q $(VENV)/torch-wheel/torch-*.whl && rm -rf $(VENV)/torch-wheel; \
	else echo "note: no local CPU build of torch $(TORCH): the tests skip their torch parts"; fi
	touch $@

demo: setup
	$(PY) -m mxboard.demo --logdir $(LOGDIR) $(if $(filter 0,$(SERVE)),--no-serve,)

test: setup
	$(PY) -m pytest -q tests

screenshots: setup
	rm -rf runs/screenshots && $(PY) -m mxboard.demo --logdir runs/screenshots --no-serve
	$(PY) tools/screenshots.py --logdir runs/screenshots --out docs

bench: setup
	$(PY) tools/bench.py

wheel: setup
	PYTHON=$(PY) tools/pip_package/build_pip_package.sh dist

wheelhouse: wheel
	rm -rf dist/wheelhouse && mkdir -p dist/wheelhouse
	cp $$(ls -t dist/mxboard-*-py3-none-any.whl | head -n 1) dist/wheelhouse/
	$(PY) -m pip download -q --dest dist/wheelhouse dist/wheelhouse/mxboard-*.whl

protos: setup
	$(PY) tools/gen_protos.py

clean:
	rm -rf $(VENV) build dist .cache .pytest_cache python/*.egg-info
