# Set-up is part of every target: a fresh machine needs only python3 (3.11+) and make.
# Two set-ups share one venv: `make example` installs hloscope alone (numpy, ml_dtypes, rich);
# the targets for developers add the dev extra (jax, pytest, flax, optax, ruff, pyright, ...).
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.installed-core: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-core pyproject.toml
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

.PHONY: install install-dev example test fuzz bench lint
install: $(VENV)/.installed-core  ## hloscope and its three dependencies, nothing else

install-dev: $(VENV)/.installed-dev  ## also what the tests, lint, fuzz and benchmarks need

example: $(VENV)/.installed-core  ## the main job on the bundled example: an HTML report
	$(VENV)/bin/hloscope report

test: $(VENV)/.installed-dev  ## the test suite (the same command CI runs)
	$(PY) -m pytest -n 2 -q

fuzz: $(VENV)/.installed-dev  ## a long parser fuzz campaign (10,000 cases)
	$(PY) tests/text/fuzz_parser.py --cases 10000

bench: $(VENV)/.installed-dev  ## benchmarks: figures and ratios against XLA measured in the same run
	$(PY) benchmarks/parse.py

lint: $(VENV)/.installed-dev  ## ruff, the layer contract (import-linter) and the type checker (pyright)
	$(PY) -m ruff check src tests benchmarks tools
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pyright --pythonpath $(PY) src
