# make demo        train a Gluon CNN on bundled digits, log every summary kind, serve it
#                  (make demo SERVE=0 LOGDIR=DIR: into DIR, without serving; LOGDIR=s3://bucket/run:
#                  into an S3 store, AWS_ENDPOINT_URL and credentials from the environment)
# make test        set up .venv with what the tests need (idempotent) and run the test suite
# make test-tools  the system tools a few tests need, skipping without them: headless Chromium
#                  (pages drawn), iproute2 (network namespaces); CI installs them
# make bench       the benchmark, side by side with tensorboardX and torch.utils.tensorboard
# make wheel       dist/mxboard-<version>-py3-none-any.whl (logger + bundled TensorBoard launcher)
# make wheelhouse  dist/wheelhouse/: that wheel and every dependency, for offline installs
# make clean       remove everything the targets above made
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BASE := $(VENV)/.base
DEMO := $(VENV)/.demo
TESTS := $(VENV)/.tests
TORCH ?= 2.13.0
LOGDIR ?= runs/demo
SERVE ?= 1

.PHONY: setup demo test test-tools bench screenshots protos wheel wheelhouse clean

setup: $(TESTS)

# the venv, and `patch`: installing mxboard builds it, and the build applies patches/
$(BASE):
	command -v patch >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends patch >/dev/null; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	touch $@

# mxboard with MXNet and what the demo trains on
# (an older mxboard shipped a `tensorboard` script: uninstalling it on upgrade deleted
# upstream's, which is reinstalled then)
$(DEMO): $(BASE) pyproject.toml setup.py
	$(PY) -m pip install -q -e '.[demo]'
	test -x $(VENV)/bin/tensorboard || $(PY) -m pip install -q --force-reinstall --no-deps \
	    "tensorboard==$$($(PY) -c 'import tensorboard; print(tensorboard.__version__)')"
	touch $@

# the test extra, and torch (coexistence with torch.utils.tensorboard, DLPack input): the CPU
# build where the machine offers one, never the multi-GB CUDA build from the index
$(TESTS): $(DEMO)
	$(PY) -m pip install -q -e '.[test,demo]'
	if $(PY) -m pip download -q --no-deps --no-index -d $(VENV)/torch-wheel torch==$(TORCH) 2>/dev/null; then \
	    $(PY) -m pip install -q $(VENV)/torch-wheel/torch-*.whl && rm -rf $(VENV)/torch-wheel; \
	else echo "note: no local CPU build of torch $(TORCH): the tests skip their torch parts"; fi
	touch $@

test-tools:
	missing=""; command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v chromium >/dev/null || missing="$$missing chromium fonts-dejavu-core"; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi

demo: $(DEMO)
	case "$(LOGDIR)" in *://*) $(PY) -c 'import s3fs, boto3' 2>/dev/null || \
	    $(PY) -m pip install -q -e '.[demo,s3]';; esac
	$(PY) -m mxboard.demo --logdir $(LOGDIR) $(if $(filter 0,$(SERVE)),--no-serve,)

test: $(TESTS)
	$(PY) -m pytest -q tests

screenshots: $(DEMO) test-tools
	rm -rf runs/screenshots && $(PY) -m mxboard.demo --logdir runs/screenshots --no-serve
	$(PY) tools/screenshots.py --logdir runs/screenshots --out docs

bench: $(TESTS)
	$(PY) tools/bench.py

wheel: $(BASE)
	PYTHON=$(PY) tools/pip_package/build_pip_package.sh dist

wheelhouse: wheel
	rm -rf dist/wheelhouse && mkdir -p dist/wheelhouse
	cp $$(ls -t dist/mxboard-*-py3-none-any.whl | head -n 1) dist/wheelhouse/
	$(PY) -m pip download -q --dest dist/wheelhouse dist/wheelhouse/mxboard-*.whl

protos: $(TESTS)
	$(PY) tools/gen_protos.py

clean:
	rm -rf $(VENV) build dist runs .cache .pytest_cache .hypothesis *.egg-info python/*.egg-info
	find tensorboard_bundle/_patched -name '*.py' ! -name __init__.py -delete
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
