"""The models tier as fixtures (Note [Models tier] in hloscope/testing/models/programs.py).

``model`` is parametrized over every model; each is built once (jax lowers, compiles and runs
it on XLA:CPU) and cached on disk under ``.cache/models/<jax version>/``, so a second session,
or the other pytest-xdist worker, reuses it. Tests take ``model`` and read its files:
``pre.hlo``, ``post.hlo``, inputs and outputs per device and whole, XLA's cost and memory
analyses (``OracleCase``).
"""
from __future__ import annotations

import pytest

from hloscope.testing.models import LLM_MODULES, MODEL_NAMES, build, xla_bench_dir

pytest.importorskip("flax")
pytest.importorskip("optax")


@pytest.fixture(params=MODEL_NAMES)
def model(request: pytest.FixtureRequest):
    return build(request.param)


@pytest.fixture(params=["pre", "post"])
def stage(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=LLM_MODULES)
def llm_path(request: pytest.FixtureRequest):
    """The path of one of XLA's LLM benchmark modules; skipped where no copy is at hand."""
    root = xla_bench_dir()
    if root is None or not (root / request.param).exists():
        pytest.skip(f"XLA's benchmark module {request.param} is not here (set HLOSCOPE_XLA_BENCH)")
    return root / request.param
