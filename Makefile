# make test   set up .venv (idempotent) and run the test suite
# make bench  the hot-path benchmark, side by side with tensorboardX
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup test bench protos clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

test: setup
	$(PY) -m pytest -q tests

bench: setup
	$(PY) tools/bench.py

protos: setup
	$(PY) tools/gen_protos.py

clean:
	rm -rf $(VENV) build dist .cache .pytest_cache python/*.egg-info
