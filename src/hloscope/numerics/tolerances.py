"""Per-dtype tolerances, in one place: how far two computations of the same value may differ.

``hloscope.testing.tolerances`` re-exports these tables for the tests and the differential
fuzzer (per op family: indexing moves values untouched, reductions reorder sums, linear
algebra accumulates long dot products). ``COMPARE`` is what ``hloscope compare`` allows
between two modules of one program (Note [Comparing values]); dtypes not in a table (integers,
booleans) must match exactly.

Note [Comparing values]
    Two modules of one program (before and after XLA's optimizations, two compiler versions)
    compute the same values in different orders: fused reductions, reassociated sums,
    ``x / c`` turned into ``x * (1 / c)``, dots tiled differently. Their difference is a
    rounding error relative to the *size of the values*, not to each element: an element
    near zero that came out of a cancellation has no relative accuracy at all. So a pair
    agrees when ``max |a - b| <= atol + rtol * max(|a|max, |b|max)`` over the whole array (NaN
    where both have NaN counts as equal; a NaN or infinity on one side only is a difference
    of infinity). ``COMPARE``'s rtol is a few hundred roundings of the dtype, which rounding
    along a whole training step stays inside (measured on the models tier, tests/numerics),
    while a changed constant or a swapped operand lands orders of magnitude above it.
    Constants are written, not computed: two of them are compared with rtol alone, so a
    changed epsilon (1e-8 made 1.5e-8) is a difference, not a rounding.
"""
from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["INDEXING", "REDUCTION", "LINALG", "COMPARE", "Tolerance", "tolerance_for", "difference"]

Tolerance = dict  # {"rtol": float, "atol": float}

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
# Note [Comparing values]: relative to the largest magnitude of the array.
COMPARE = {
    np.dtype(np.float64): dict(rtol=1e-9, atol=1e-12),
    np.dtype(np.complex128): dict(rtol=1e-9, atol=1e-12),
    np.dtype(np.float32): dict(rtol=1e-3, atol=1e-5),
    np.dtype(np.complex64): dict(rtol=1e-3, atol=1e-5),
    np.dtype(np.float16): dict(rtol=2e-2, atol=1e-4),
    np.dtype(ml_dtypes.bfloat16): dict(rtol=6e-2, atol=2e-3),
    np.dtype(ml_dtypes.float8_e4m3fn): dict(rtol=0.25, atol=1e-2),
    np.dtype(ml_dtypes.float8_e5m2): dict(rtol=0.5, atol=1e-2),
}


def tolerance_for(dtype: Any, table: dict | None = None, overrides: dict | None = None) -> Tolerance | None:
    """The tolerance of ``dtype`` in ``table`` (default ``COMPARE``) with ``overrides`` (a dict
    by dtype name or dtype, or one ``{"rtol": .., "atol": ..}`` for every float dtype) on top;
    None when the values must be equal."""
    dtype = np.dtype(dtype)
    tol = (COMPARE if table is None else table).get(dtype)
    if overrides:
        if "rtol" in overrides or "atol" in overrides:
            if tol is not None or dtype.kind in "fc" or "float" in dtype.name:
                tol = {**(tol or {"rtol": 0.0, "atol": 0.0}), **overrides}
        else:
            o = overrides.get(dtype.name, overrides.get(dtype))
            if o is not None:
                tol = {**(tol or {"rtol": 0.0, "atol": 0.0}), **o}
    return tol


def difference(a: np.ndarray, b: np.ndarray, tol: Tolerance | None) -> tuple[float, float, float]:
    """(max |a - b|, the scale max(|a|max, |b|max), the error in tolerances: <= 1 agrees) of
    two arrays of one shape (Note [Comparing values]); exact dtypes give 0 or infinity."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        return math.inf, math.nan, math.inf
    if a.size == 0:
        return 0.0, 0.0, 0.0
    if tol is None or not (a.dtype.kind in "fc" or "float" in a.dtype.name):
        if a.dtype.kind in "iub" or a.dtype.kind == "V":
            equal = bool(np.array_equal(a, b))
        else:
            equal = bool(np.array_equal(a, b, equal_nan=True))
        return (0.0, 0.0, 0.0) if equal else (math.inf, math.nan, math.inf)
    cast = np.complex128 if a.dtype.kind == "c" else np.float64
    fa, fb = a.astype(cast), b.astype(cast)
    with np.errstate(all="ignore"):
        nan_a, nan_b = np.isnan(fa), np.isnan(fb)
        if (nan_a != nan_b).any():
            return math.inf, math.nan, math.inf
        inf_a, inf_b = np.isinf(fa), np.isinf(fb)
        if (inf_a != inf_b).any() or (fa[inf_a] != fb[inf_a]).any():
            return math.inf, math.nan, math.inf
        ok = ~(nan_a | inf_a)
        if not ok.any():
            return 0.0, 0.0, 0.0
        d = np.abs(fa[ok] - fb[ok])
        err = float(d.max())
        scale = float(max(np.abs(fa[ok]).max(), np.abs(fb[ok]).max()))
    bound = tol["atol"] + tol["rtol"] * scale
    return err, scale, (err / bound if bound > 0 else (0.0 if err == 0 else math.inf))
