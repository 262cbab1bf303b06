# Set-up is part of every target: a fresh machine needs only python3 (3.11+) and make.
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

.PHONY: example test fuzz bench lint
example: $(VENV)/.installed  ## the main job on the bundled example: an HTML report
	$(VENV)/bin/hloscope report

test: $(VENV)/.installed  ## the test suite (the same command CI runs)
	$(PY) -m pytest -n 2 -q

fuzz: $(VENV)/.installed  ## a long parser fuzz campaign (10,000 cases)
	$(PY) tests/text/fuzz_parser.py --cases 10000

bench: $(VENV)/.installed  ## benchmarks: figures and ratios against XLA measured in the same run
	$(PY) benchmarks/parse.py

lint: $(VENV)/.installed  ## ruff, the layer contract (import-linter) and the type checker (pyright)
	$(PY) -m ruff check src tests benchmarks tools
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pyright --pythonpath $(PY) src
