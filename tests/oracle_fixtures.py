"""pytest plugin: the oracle corpus as fixtures (register with ``pytest_plugins``).

Fixtures:
    oracle_corpus   session: ``OracleCorpus``; ``.case(name)`` builds one program lazily (cached
                    on disk under ``.cache/oracle/<jax version>/``) and returns an ``OracleCase``
    oracle_case     an ``OracleCase``, parametrized over every program (ids = program names)
Helpers:
    ORACLE_PROGRAM_NAMES, assert_values_close(got, expected, rtol, atol)

Cases build on first use, so a run that selects a few programs builds only those.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hloscope.testing.oracle import corpus as _corpus
from hloscope.testing.oracle.programs import PROGRAMS

OracleCase = _corpus.OracleCase
ORACLE_PROGRAM_NAMES = [p.name for p in PROGRAMS]

__all__ = ["OracleCorpus", "OracleCase", "ORACLE_PROGRAM_NAMES", "assert_values_close",
           "oracle_corpus", "oracle_case"]


class OracleCorpus:
    """Lazy access to the corpus cases under ``cache_dir``."""

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir
        self.names = list(ORACLE_PROGRAM_NAMES)

    def case(self, name: str) -> OracleCase:
        """The built case for program ``name`` (built now if missing or stale)."""
        return _corpus.build_corpus(self.cache_dir, [name])[name]

    def all_cases(self) -> list[OracleCase]:
        return list(_corpus.build_corpus(self.cache_dir).values())


@pytest.fixture(scope="session")
def oracle_corpus() -> OracleCorpus:
    return OracleCorpus(_corpus.default_cache_dir())


@pytest.fixture(params=ORACLE_PROGRAM_NAMES)
def oracle_case(request: pytest.FixtureRequest, oracle_corpus: OracleCorpus) -> OracleCase:
    return oracle_corpus.case(request.param)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def assert_values_close(got: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Compare nested values leaf by leaf: same shape and dtype; integers and bools exactly,
    floats (bf16/fp8 widened to f32) and complex with ``rtol``/``atol``; NaNs equal NaNs."""
    g, e = _leaves(got), _leaves(expected)
    assert len(g) == len(e), f"{len(g)} leaves, expected {len(e)}"
    for i, (a, b) in enumerate(zip(g, e, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, f"leaf {i}: shape {a.shape}, expected {b.shape}"
        assert a.dtype == b.dtype, f"leaf {i}: dtype {a.dtype}, expected {b.dtype}"
        if a.dtype.kind in "biu" or a.dtype == np.bool_:
            np.testing.assert_array_equal(a, b, err_msg=f"leaf {i}")
        else:
            if a.dtype.kind not in "fc":  # ml_dtypes floats report kind 'V'
                a, b = a.astype(np.float32), b.astype(np.float32)
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"leaf {i}")
