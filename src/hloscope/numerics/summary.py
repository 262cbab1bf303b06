"""What a value holds, in a few numbers: finite or not, and min/max/mean/std over its elements.

The numerics tools read every value a run makes, so these functions are written for speed
on big arrays (Note [Cheap finiteness]) and work per device on lockstep's stacked values
(every device's array along a leading axis).

Note [Cheap finiteness]
    Whether an f32 array holds a NaN or an infinity is one pass: ``np.dot(x, x)`` is finite
    exactly when every element is (a NaN or an infinity makes the sum of squares NaN or
    infinite), unless a square overflows (|x| > 1.8e19 in f32), and BLAS does it faster than
    ``np.isfinite(x).all()`` (which also allocates a boolean array). Only when the dot is not
    finite do we look element by element. 16-bit floats are checked on their bits (an
    exponent of all ones is an infinity or a NaN), which needs no conversion to f32.

Complex values are summarised by their magnitudes; integers and booleans have no NaN or
infinity and count as finite.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

__all__ = ["ValueSummary", "is_float", "all_finite", "nonfinite_per_device", "summarize", "leaves"]

# 16-bit floats: the mask of the exponent bits (all ones: an infinity or a NaN).
_EXPONENT_MASKS = {"float16": 0x7C00, "bfloat16": 0x7F80}


def is_float(dtype: np.dtype) -> bool:
    """True for numpy's floating and complex types and ml_dtypes' floats (bf16, fp8...)."""
    dtype = np.dtype(dtype)
    return dtype.kind in "fc" or (dtype.kind == "V" and "float" in dtype.name)


def leaves(value: Any) -> list[np.ndarray]:
    """The arrays of a value (a tuple's, depth first); tokens and other objects are skipped."""
    if isinstance(value, tuple):
        return [a for v in value for a in leaves(v)]
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, np.generic):
        return [np.asarray(value)]
    return []


def all_finite(x: np.ndarray) -> bool:
    """Whether every element of ``x`` is finite (Note [Cheap finiteness])."""
    dtype = x.dtype
    if not is_float(dtype) or x.size == 0:
        return True
    mask = _EXPONENT_MASKS.get(dtype.name)
    if mask is not None:
        bits = x.view(np.uint16) if x.flags.c_contiguous else np.ascontiguousarray(x).view(np.uint16)
        return not bool(((bits & mask) == mask).any())
    if dtype in (np.float32, np.float64) and x.flags.c_contiguous:
        flat = x.reshape(-1)
        with np.errstate(all="ignore"):
            if math.isfinite(float(np.dot(flat, flat))):
                return True
    return bool(np.isfinite(x).all())


def nonfinite_per_device(x: np.ndarray, devices: int) -> tuple[np.ndarray, np.ndarray] | None:
    """For a stacked ``x`` (``devices`` along axis 0; ``devices=1``: one device's value),
    (has NaN, has infinity) per device, or None when every element is finite."""
    if not is_float(x.dtype) or x.size == 0:
        return None
    if devices > 1 and x.ndim > 0 and x.strides[0] == 0:  # lockstep's shared value: one device's
        one = nonfinite_per_device(x[0], 1)
        return None if one is None else (np.repeat(one[0], devices), np.repeat(one[1], devices))
    if all_finite(x):
        return None
    flat = x.reshape(devices, -1) if devices > 1 else x.reshape(1, -1)
    return np.asarray(np.isnan(flat).any(axis=1)), np.asarray(np.isinf(flat).any(axis=1))


@dataclasses.dataclass(frozen=True)
class ValueSummary:
    """What one array holds: its shape and dtype, element counts (NaN, infinities, zeros,
    finite) and min/max/mean/std/abs-max over its finite elements (None when it has none;
    complex values: over their magnitudes)."""

    shape: tuple[int, ...]
    dtype: str
    size: int
    finite: int
    nan: int
    inf: int
    zero: int
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    abs_max: float | None

    @property
    def all_finite(self) -> bool:
        return self.finite == self.size

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["shape"] = list(self.shape)
        return out

    def describe(self) -> str:
        """One line: ``f32[4,8] min -1.2 max 3.4 mean 0.5, 2 NaN, 30/32 finite``."""
        dims = ",".join(map(str, self.shape))
        parts = [f"{self.dtype}[{dims}]"]
        if self.min is not None:
            parts.append(f"min {self.min:.6g} max {self.max:.6g} mean {self.mean:.6g}")
        bad = [f"{self.nan} NaN"] * bool(self.nan) + [f"{self.inf} inf"] * bool(self.inf)
        parts.append(", ".join(bad + [f"{self.finite}/{self.size} finite"]))
        return " ".join(parts)


def summarize(x: Any) -> ValueSummary:
    """The summary of one array (any dtype)."""
    a = np.asarray(x)
    size = int(a.size)
    dtype = a.dtype
    name = dtype.name
    if size == 0:
        return ValueSummary(tuple(a.shape), name, 0, 0, 0, 0, 0, None, None, None, None, None)
    if dtype.kind == "c":
        nan = int(np.isnan(a).sum())
        inf = int((np.isinf(a) & ~np.isnan(a)).sum())
        values = np.abs(a).astype(np.float64)
    elif is_float(dtype):
        values = a.astype(np.float64)
        nan = int(np.isnan(values).sum()) if not all_finite(a) else 0
        inf = int(np.isinf(values).sum()) if nan or not all_finite(a) else 0
    else:
        values = a.astype(np.float64)
        nan = inf = 0
    zero = size - int(np.count_nonzero(values))
    finite_mask = np.isfinite(values) if nan or inf else None
    finite_values = values[finite_mask] if finite_mask is not None else values.reshape(-1)
    finite = int(finite_values.size)
    if finite == 0:
        return ValueSummary(tuple(a.shape), name, size, 0, nan, inf, zero, None, None, None, None, None)
    lo, hi = float(finite_values.min()), float(finite_values.max())
    mean = float(finite_values.mean())
    std = float(finite_values.std())
    return ValueSummary(tuple(a.shape), name, size, finite, nan, inf, zero, lo, hi, mean, std,
                        max(abs(lo), abs(hi)))
