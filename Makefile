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

.PHONY: install install-dev example test fuzz bench lint jax-oldest
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

# The oldest jax the `jax` extra accepts (pyproject.toml), in a venv of its own outside the tree.
JAX_OLDEST ?= 0.7.0
JAX_OLDEST_VENV ?= /tmp/hloscope-jax-$(JAX_OLDEST)
BRIDGE_TESTS := tests/test_from_jax.py tests/test_formats.py tests/test_xla_rewrite_pass.py \
	tests/test_xla_gpu_rewrite.py tests/cli/test_run_cli.py tests/text/test_xla_syntax.py

jax-oldest:  ## the XLA bridge's tests (from_jax, --check-xla, StableHLO/proto) on the oldest jax supported
	python3 -m venv $(JAX_OLDEST_VENV)
	$(JAX_OLDEST_VENV)/bin/python -m pip install -q -e '.[jax]' 'jax==$(JAX_OLDEST)' 'jaxlib==$(JAX_OLDEST)' \
		pytest pytest-xdist hypothesis
	$(JAX_OLDEST_VENV)/bin/python -m pytest -n 2 -q -p no:cacheprovider -m 'xla_execute or not xla_execute' \
		$(BRIDGE_TESTS)
