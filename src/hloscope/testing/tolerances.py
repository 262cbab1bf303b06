"""Per-dtype tolerances of hloscope against XLA, in one place: the interpreter's tests and the
differential fuzzer (``hloscope.testing.fuzz``) read these tables.

Each op family has its own table (rtol/atol by result dtype), because families differ in how
much rounding XLA's own kernels add: indexing moves values untouched, reductions reorder sums,
linear algebra accumulates long dot products. Dtypes not in a table (integers, bools) must
match exactly.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["INDEXING", "REDUCTION", "LINALG", "assert_close"]

INDEXING = {
    np.dtype(np.float32): dict(rtol=1e-6, atol=1e-6),
    np.dtype(ml_dtypes.bfloat16): dict(rtol=1e-2, atol=1e-2),
}
REDUCTION = {
    np.dtype(np.float64): dict(rtol=1e-12, atol=1e-12),
    np.dtype(np.float32): dict(rtol=1e-5, atol=1e-5),
    np.dtype(np.float16): dict(rtol=2e-3, atol=2e-3),
    np.dtype(ml_dtypes.bfloat16): dict(rtol=2e-2, atol=2e-2),
}
LINALG = {
    np.dtype(np.float64): dict(rtol=1e-12, atol=1e-12),
    np.dtype(np.float32): dict(rtol=2e-5, atol=2e-5),
    np.dtype(np.complex64): dict(rtol=2e-5, atol=2e-5),
    np.dtype(np.float16): dict(rtol=2e-3, atol=2e-3),
    np.dtype(ml_dtypes.bfloat16): dict(rtol=1e-2, atol=1e-2),
}


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
