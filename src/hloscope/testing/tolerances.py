"""Per-dtype tolerances of hloscope against XLA, in one place: the interpreter's tests and the
differential fuzzer (``hloscope.testing.fuzz``) read these tables.

Each op family has its own table (rtol/atol by result dtype), because families differ in how
much rounding XLA's own kernels add: indexing moves values untouched, reductions reorder sums,
linear algebra accumulates long dot products. Dtypes not in a table (integers, bools) must
match exactly. The tables live in ``hloscope.numerics.tolerances`` (a stage below this one),
with ``COMPARE``, what ``hloscope compare`` allows between two modules of one program.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from hloscope.numerics.tolerances import COMPARE, INDEXING, LINALG, REDUCTION

__all__ = ["INDEXING", "REDUCTION", "LINALG", "COMPARE", "MODULE", "module_tolerance", "assert_close"]


# Whole modules on random inputs (XLA's own test modules, tools/xla_sweep.py): ``rtol`` of each
# element, and ``rms_atol`` times the leaf's root-mean-square magnitude, so the absolute part
# scales with the leaf (a long sum that cancels to ~0 differs by ulps of its terms, which are
# about the leaf's scale; Note [Sweep tolerance] in hloscope.testing.xla_modules). Looser than
# the op families above: a module chains them, and XLA:CPU's transcendental kernels are
# polynomials a few ulps off. Floats narrower than f16 (fp8, fp6, fp4) get about one ulp.
MODULE = {
    np.dtype(np.float64): dict(rtol=1e-9, rms_atol=1e-9),
    np.dtype(np.complex128): dict(rtol=1e-9, rms_atol=1e-9),
    np.dtype(np.float32): dict(rtol=1e-4, rms_atol=1e-4),
    np.dtype(np.complex64): dict(rtol=1e-4, rms_atol=1e-4),
    np.dtype(np.float16): dict(rtol=1e-2, rms_atol=1e-2),
    np.dtype(ml_dtypes.bfloat16): dict(rtol=4e-2, rms_atol=4e-2),
}
_NARROW_FLOAT = dict(rtol=0.25, rms_atol=0.25)


def module_tolerance(dtype) -> dict[str, float] | None:
    """``MODULE``'s row for ``dtype`` (fp8 and narrower floats share one); None for integers,
    preds and tokens, which must match exactly."""
    dtype = np.dtype(dtype)
    if dtype in MODULE:
        return MODULE[dtype]
    if dtype.kind == "V" and dtype.type.__module__.startswith("ml_dtypes") and "float" in dtype.name:
        return _NARROW_FLOAT
    return None


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
