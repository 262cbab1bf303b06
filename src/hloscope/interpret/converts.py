"""XLA's convert, bitcast-convert and reduce-precision as pure numpy functions.

``convert`` changes each element's type by value (rounding, saturating, wrapping as XLA:CPU
does), ``bitcast_convert`` reinterprets bits, ``reduce_precision`` rounds to a narrower float
format within the same type. tests/interpret/test_elementwise.py checks all three against
XLA:CPU through jax, dtype pair by dtype pair.
"""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from hloscope.interpret.dtype_bits import (
    E8M0,
    F4,
    NARROW_FLOATS,
    SUB_BYTE_INTS,
    UINT_OF_BYTES,
    Array,
    bit_width,
    container,
    contiguous,
    from_unsigned_bits,
    int_bits,
    int_limits,
    is_complex,
    is_float,
    is_int,
    unsigned_bits,
    wrap_to,
)
from hloscope.interpret.float_env import current, daz, ftz
from hloscope.ir.literal import float_from_f64

E_BF16 = np.dtype(ml_dtypes.bfloat16)

__all__ = ["convert", "bitcast_convert", "reduce_precision"]


def convert(x: Array, to_dtype: Any) -> Array:
    """XLA ``convert`` of ``x`` to ``to_dtype``.

    * float -> int: truncate toward zero, saturate to the int range, NaN -> 0.
    * int -> narrower int: wrap (two's complement); any -> pred: ``x != 0``.
    * float -> float: round to nearest even; overflow goes to inf, or for types without inf
      (f8e4m3fn, fnuz, f4e2m1fn) as ml_dtypes/XLA define it; NaN -> -0.0 for f4e2m1fn (no NaN).
      XLA:CPU rounds f64 -> f16/bf16 through f32 (twice) but f64 -> fp8/fp4 once; on an AVX-512
      host f64 -> f16 once (float environment "xla-cpu-avx512", float_env.py).
    * complex -> real (and pred): the real part; real -> complex: imaginary part 0.

    XLA:CPU saturates f4e2m1fn ±6.0 to the int range when converting to integers; we give ±6
    (see tests/interpret/test_elementwise.py, KNOWN_XLA_CPU_DIFFERENCES).
    """
    src, dst = x.dtype, np.dtype(to_dtype)
    with np.errstate(all="ignore"):
        if src == dst:
            return x.copy()
        if {src, dst} != {np.dtype(np.float32), E_BF16}:  # bf16 <-> f32 moves bits: kept
            # Note [Denormals] in float_env.py: a flushed type's denormal reads as zero, and
            # a result in a flushed type (f64 -> f32) is written as zero when denormal.
            return ftz(_convert(daz(x), dst))
        return _convert(x, dst)


def _convert(x: Array, dst: np.dtype[Any]) -> Array:
    src = x.dtype
    with np.errstate(all="ignore"):
        if is_complex(src):
            if is_complex(dst):
                return x.astype(dst)
            return convert(np.real(x).copy(), dst)  # also for pred: real(x) != 0
        if dst == np.bool_:
            return (x.astype(np.float32) if src in NARROW_FLOATS else x) != 0
        if is_complex(dst):
            real_dtype = np.float64 if dst == np.complex128 else np.float32
            return convert(x, real_dtype).astype(dst)
        if src == np.bool_:
            x, src = x.astype(np.uint8), np.dtype(np.uint8)
        if src in SUB_BYTE_INTS:
            x, src = x.astype(container(src)), container(src)
        if is_int(dst):
            if is_float(src):
                return _float_to_int(x, dst)
            return wrap_to(x, dst)
        # dst is a float.
        if is_int(src):
            return x.astype(dst)
        return _float_to_float(x, dst)


def _float_to_int(x: Array, dst: np.dtype[Any]) -> Array:
    bits, signed = int_bits(dst)
    lo, hi = int_limits(dst)
    t = np.trunc(x.astype(np.float64))  # exact for every float type
    too_big = t >= 2.0 ** (bits - 1 if signed else bits)  # powers of two: exact thresholds
    too_small = t < float(lo)
    in_range = ~(too_big | too_small | np.isnan(t))
    wide = np.int64 if signed else np.uint64
    v = np.where(in_range, t, 0).astype(wide)
    v = np.where(too_big, wide(hi), np.where(too_small, wide(lo), v))
    return wrap_to(v, dst)


def _float_to_float(x: Array, dst: np.dtype[Any]) -> Array:
    # From f64, XLA:CPU rounds as its parser does (Note [Reading float literals] in
    # ir/literal.py): through f32 to f16 and bf16 (1 + 2^-11 + 2^-40 -> 1.0 in f16), directly
    # to the fp8/fp4 types.
    source = x
    if x.dtype == np.float64 and dst == np.float16 and current().f64_to_f16_direct:
        r = x.astype(np.float16)  # numpy rounds f64 -> f16 once, correctly
    elif x.dtype == np.float64:
        r = float_from_f64(x, dst)
    else:
        try:
            r = x.astype(dst)
        except TypeError:  # ml_dtypes has no direct cast between some fp8 pairs: go through f32,
            r = x.astype(np.float32).astype(dst)  # exact for every source narrower than f32
    if dst == E8M0 and source.dtype == np.float64:
        # f8e8m0fnu has no zero and no subnormals: from f64, XLA:CPU gives NaN below its
        # smallest value 2^-127 (from f32, f32 subnormals round up to 2^-127 instead).
        r = np.where(source < 2.0**-127, np.array(0xFF, np.uint8).view(E8M0), r)
    if dst == F4:  # f4e2m1fn has no NaN: XLA gives -0.0 (bits 0b1000)
        nan = np.isnan(x.astype(np.float32) if x.dtype in NARROW_FLOATS else x)
        r = np.where(nan, np.array(0x8, np.uint8).view(F4), r)
    return r


def _byte_aligned(dt: np.dtype[Any]) -> bool:
    return dt != np.bool_ and bit_width(dt) % 8 == 0


def bitcast_convert(x: Array, to_dtype: Any) -> Array:
    """XLA ``bitcast-convert``: reinterpret each element's bits as ``to_dtype``.

    Equal bit widths keep the shape. A wider source gains a minor-most dimension of
    ``width(src) / width(dst)`` (f32[4] -> u8[4,4]); a narrower source loses its minor-most
    dimension, which must have that size (u8[4,4] -> f32[4]). Sub-element order is little-endian
    (element [..., 0] holds the lowest bits), as on XLA:CPU. s4/u4/f4 elements are 4 bits wide.
    """
    dst = np.dtype(to_dtype)
    src_width, dst_width = bit_width(x.dtype), bit_width(dst)
    if src_width < dst_width:
        k = dst_width // src_width
        if x.ndim == 0 or x.shape[-1] != k:
            raise ValueError(
                f"bitcast-convert {x.dtype}{list(x.shape)} -> {dst}: the minor-most dimension"
                f" must be {k}"
            )
    if _byte_aligned(x.dtype) and _byte_aligned(dst):
        # Whole bytes (c128 included, which no integer holds): a little-endian byte view.
        # Shapes spelled out (no -1): arrays may be 0-d or empty.
        raw = contiguous(x).reshape(x.shape + (1,)).view(np.uint8)  # (..., source item size)
        if src_width >= dst_width:
            k = src_width // dst_width
            parts = raw.reshape(x.shape + (k, dst.itemsize)).view(dst)  # (..., k, 1)
            return parts.reshape(x.shape + ((k,) if k > 1 else ()))
        return raw.reshape(x.shape[:-1] + (dst.itemsize,)).view(dst).reshape(x.shape[:-1])
    u = unsigned_bits(x)
    if src_width == dst_width:
        return from_unsigned_bits(u, dst)
    if src_width > dst_width:
        k = src_width // dst_width
        shifts = (np.arange(k, dtype=np.uint64) * np.uint64(dst_width)).astype(np.uint64)
        parts = (u.astype(np.uint64)[..., None] >> shifts) & np.uint64((1 << dst_width) - 1)
        return from_unsigned_bits(parts, dst)
    shifts = (np.arange(k, dtype=np.uint64) * np.uint64(src_width)).astype(np.uint64)
    combined = np.bitwise_or.reduce(u.astype(np.uint64) << shifts, axis=-1)
    return from_unsigned_bits(combined, dst)


def reduce_precision(x: Array, exponent_bits: int, mantissa_bits: int) -> Array:
    """XLA ``reduce-precision``: round ``x`` to a float with the given exponent and mantissa bits.

    A transcription of XLA's EmitReducePrecisionIR, on the bits of ``x``'s own type (f16, bf16,
    f32, f64; fp8 types go through f32): round to nearest even on the mantissa; values above
    the reduced type's largest exponent become ±inf; values at or below its smallest normal
    exponent become ±0 (no denormals in the reduced type); NaN stays NaN, even with no mantissa
    bits (XLA:CPU gives NaN there, although EmitReducePrecisionIR's comment suggests inf).
    """
    if x.dtype not in (np.float16, np.float32, np.float64, np.dtype(ml_dtypes.bfloat16)):
        return reduce_precision(x.astype(np.float32), exponent_bits, mantissa_bits).astype(x.dtype)
    itemsize = np.dtype(x.dtype).itemsize
    nbits = itemsize * 8
    src_mantissa_bits = ml_dtypes.finfo(x.dtype).nmant
    src_exponent_bits = nbits - 1 - src_mantissa_bits
    uint = UINT_OF_BYTES[itemsize]
    one = 1
    full = (1 << nbits) - 1
    bits = contiguous(x).view(uint)
    sign_mask = one << (nbits - 1)
    exp_mask = ((one << src_exponent_bits) - 1) << src_mantissa_bits
    is_nan = (bits & uint(full & ~sign_mask)) > uint(exp_mask)
    out = bits.copy()
    with np.errstate(all="ignore"):
        if mantissa_bits < src_mantissa_bits:
            drop = src_mantissa_bits - mantissa_bits
            last_bit_mask = one << drop
            base_bias = (last_bit_mask >> 1) - 1
            last_bit = (out & uint(last_bit_mask)) >> uint(drop)
            out = (out + last_bit + uint(base_bias)) & uint(full & ~(last_bit_mask - 1))
        if exponent_bits < src_exponent_bits:
            bias = (one << (src_exponent_bits - 1)) - 1
            reduced_bias = (one << (exponent_bits - 1)) - 1
            max_exp = (bias + reduced_bias) << src_mantissa_bits
            min_exp = (bias - reduced_bias) << src_mantissa_bits
            exponent = out & uint(exp_mask)
            signed_zero = out & uint(sign_mask)
            signed_inf = signed_zero | uint(exp_mask)
            out = np.where(exponent > uint(max_exp), signed_inf, out)
            out = np.where(exponent <= uint(min_exp), signed_zero, out)
    result = out.astype(uint).view(x.dtype)
    return np.where(is_nan, x, result)
