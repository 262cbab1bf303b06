"""Facts about the interpreter's element dtypes and their raw bit patterns.

The elementwise rows (elementwise.py), the converts (converts.py) and the complex formulas
(complex_ops.py) share these: which numpy/ml_dtypes dtypes are floats, narrow floats or
sub-byte integers, an element's bit width as XLA counts it, two's-complement wrapping into a
width, and each element's bits as an unsigned integer and back. Sub-byte integers (s2, s4, u2,
u4) are stored one per byte by ml_dtypes; their bit patterns are the low 2 or 4 bits.
"""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

__all__ = [
    "Array", "SUB_BYTE_INTS", "FLOATS", "NARROW_FLOATS", "F4", "FNUZ", "E8M0", "UINT_OF_BYTES",
    "INT_OF_BYTES", "contiguous", "is_float", "is_complex", "is_int", "is_signed_int",
    "int_bits", "int_limits", "bit_width", "container", "wrap_to", "unsigned_bits",
    "from_unsigned_bits", "as_signed", "as_unsigned", "component_dtype",
]

Array = np.ndarray[Any, Any]

SUB_BYTE_INTS: dict[np.dtype[Any], tuple[int, bool]] = {
    np.dtype(ml_dtypes.int2): (2, True),
    np.dtype(ml_dtypes.int4): (4, True),
    np.dtype(ml_dtypes.uint2): (2, False),
    np.dtype(ml_dtypes.uint4): (4, False),
}
_ML_FLOATS = [
    ml_dtypes.bfloat16,
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e5m2,
    ml_dtypes.float8_e4m3fnuz,
    ml_dtypes.float8_e5m2fnuz,
    ml_dtypes.float8_e4m3b11fnuz,
    ml_dtypes.float8_e3m4,
    ml_dtypes.float8_e4m3,
    ml_dtypes.float8_e8m0fnu,
    ml_dtypes.float4_e2m1fn,
]
FLOATS = frozenset(np.dtype(t) for t in [np.float16, np.float32, np.float64, *_ML_FLOATS])
# Floats narrower than f32: XLA:CPU computes them in f32 (Note [Low-precision floats]).
NARROW_FLOATS = FLOATS - {np.dtype(np.float32), np.dtype(np.float64)}
F4 = np.dtype(ml_dtypes.float4_e2m1fn)
FNUZ = frozenset(np.dtype(t) for t in (ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz,
                                       ml_dtypes.float8_e4m3b11fnuz))
E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
UINT_OF_BYTES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
INT_OF_BYTES = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def contiguous(x: Array) -> Array:
    """``x`` in C order, keeping 0-d arrays 0-d (np.ascontiguousarray makes them 1-d)."""
    return x if x.flags.c_contiguous else x.copy(order="C")


def is_float(dt: np.dtype[Any]) -> bool:
    """True for every real floating-point dtype, f64 down to f4e2m1fn."""
    return dt in FLOATS


def is_complex(dt: np.dtype[Any]) -> bool:
    """True for c64 and c128."""
    return dt.kind == "c"


def is_int(dt: np.dtype[Any]) -> bool:
    """True for s2..s64 and u2..u64 (not pred)."""
    return dt.kind in "iu" or dt in SUB_BYTE_INTS


def int_bits(dt: np.dtype[Any]) -> tuple[int, bool]:
    """(bit width, signed) of an integer dtype."""
    if dt in SUB_BYTE_INTS:
        return SUB_BYTE_INTS[dt]
    return dt.itemsize * 8, dt.kind == "i"


def is_signed_int(dt: np.dtype[Any]) -> bool:
    """True for s2..s64."""
    return is_int(dt) and int_bits(dt)[1]


def int_limits(dt: np.dtype[Any]) -> tuple[int, int]:
    """The (lowest, highest) value of an integer dtype, as Python ints."""
    bits, signed = int_bits(dt)
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def bit_width(dtype: Any) -> int:
    """XLA's primitive_util::BitWidth: 4 for s4/u4/f4e2m1fn, 2 for s2/u2, 8 for pred."""
    dt = np.dtype(dtype)
    if dt in SUB_BYTE_INTS:
        return SUB_BYTE_INTS[dt][0]
    if dt == F4:
        return 4
    return dt.itemsize * 8


def component_dtype(dt: np.dtype[Any]) -> np.dtype[Any]:
    """The real dtype of a complex dtype's parts (f32 for c64, f64 for c128)."""
    return np.dtype(np.float64 if dt == np.complex128 else np.float32)


def container(dt: np.dtype[Any]) -> np.dtype[Any]:
    """The numpy int dtype integer rows compute in: itself, or int8/uint8 for sub-byte ints."""
    if dt in SUB_BYTE_INTS:
        return np.dtype(np.int8 if SUB_BYTE_INTS[dt][1] else np.uint8)
    return dt


def wrap_to(values: Array, dt: np.dtype[Any]) -> Array:
    """Two's-complement wrap integer ``values`` (any int dtype) into ``dt``."""
    if dt not in SUB_BYTE_INTS:
        return values.astype(dt)
    bits, signed = SUB_BYTE_INTS[dt]
    v = values.astype(np.int64) & ((1 << bits) - 1)
    if signed:
        v = v - ((v >> (bits - 1)) << bits)  # sign-extend the top bit
    return v.astype(dt)


def unsigned_bits(x: Array) -> Array:
    """The raw bit pattern of each element as an unsigned integer (uint8 for sub-byte types).

    Complex elements are one pattern of their full width only when it fits 64 bits (c64); a
    c128 element has no such integer, so c128 gives its two f64 parts' patterns along a new
    minor-most dimension of size 2 (real first)."""
    dt = x.dtype
    if dt in SUB_BYTE_INTS:
        bits, _ = SUB_BYTE_INTS[dt]
        return (x.astype(np.int8).view(np.uint8) & ((1 << bits) - 1)).astype(np.uint8)
    if dt == F4:
        return contiguous(x).view(np.uint8) & np.uint8(0xF)
    if dt == np.bool_:
        return x.astype(np.uint8)
    if dt == np.complex128:
        # A 0-d array cannot change its item size in a view: add the parts' axis first.
        return contiguous(x).reshape(*x.shape, 1).view(np.uint64)
    # Same item size, so the view is allowed on 0-d arrays too.
    return contiguous(x).view(UINT_OF_BYTES[dt.itemsize])


def from_unsigned_bits(u: Array, dt: np.dtype[Any]) -> Array:
    """Inverse of unsigned_bits: build an array of ``dt`` from bit patterns."""
    if dt in SUB_BYTE_INTS:
        return wrap_to(u, dt)
    if dt == F4:
        return (u.astype(np.uint8) & np.uint8(0xF)).view(F4)
    if dt == np.bool_:
        return u != 0
    if dt == np.complex128:  # the parts' patterns along the minor-most dimension
        return contiguous(u.astype(np.uint64)).view(dt).reshape(u.shape[:-1])
    return contiguous(u.astype(UINT_OF_BYTES[dt.itemsize])).view(dt)


def as_signed(a: Array) -> Array:
    """An unsigned array's bits read as the signed type of its width (others unchanged)."""
    if a.dtype.kind == "u":
        return a.view(INT_OF_BYTES[a.dtype.itemsize])
    return a


def as_unsigned(a: Array) -> Array:
    """A signed array's bits read as the unsigned type of its width (others unchanged)."""
    if a.dtype.kind == "i":
        return a.view(UINT_OF_BYTES[a.dtype.itemsize])
    return a
