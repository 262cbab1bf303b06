"""Shared fixtures of the interpreter tests."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _fresh_module_rng(request: pytest.FixtureRequest) -> None:
    """Reseed a test module's ``RNG`` before each of its tests, so a test's data is the same
    whichever xdist worker runs it and whatever ran before it (a failure must reproduce)."""
    if isinstance(getattr(request.module, "RNG", None), np.random.Generator):
        request.module.RNG = np.random.default_rng(1)
