"""Per-dtype tolerances of hloscope against XLA, in one place: the interpreter's tests and the
differential fuzzer (``hloscope.testing.fuzz``) read these tables.

Each op family has its own table (rtol/atol by result dtype), because families differ in how
much rounding XLA's own kernels add: indexing moves values untouched, reductions reorder sums,
linear algebra accumulates long dot products. Dtypes not in a table (integers, bools) must
match exactly. The tables live in ``hloscope.numerics.tolerances`` (a stage below this one),
with ``COMPARE``, what ``hloscope compare`` allows between two modules of one program.
"""
from __future__ import annotations

import numpy as np

from hloscope.numerics.tolerances import COMPARE, INDEXING, LINALG, REDUCTION

__all__ = ["INDEXING", "REDUCTION", "LINALG", "COMPARE", "assert_close"]


def assert_close(ours: np.ndarray, theirs, table: dict, scale: float = 1.0) -> None:
    """Same dtype and shape, values within ``table``'s tolerance (times ``scale``) or exact."""
    theirs = np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    tol = table.get(ours.dtype)
    if tol is None:
        np.testing.assert_array_equal(ours, theirs)
        return
    cast = np.complex128 if ours.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(ours.astype(cast), theirs.astype(cast),
                               rtol=tol["rtol"] * scale, atol=tol["atol"] * scale)
