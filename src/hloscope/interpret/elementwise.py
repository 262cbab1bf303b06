"""XLA's elementwise semantics as pure numpy functions: unary, binary, ternary, compare, convert.

The interpreter looks an opcode's text up in ``UNARY``, ``BINARY`` or ``TERNARY`` and calls the
row's function on numpy arrays (dtypes from numpy and ml_dtypes; scalars are 0-d arrays). The
functions never see the IR. Call them through ``apply_unary`` / ``apply_binary`` /
``apply_ternary``, which add the two rules every row shares (Note [Low-precision floats] and
Note [Quiet numpy]); the rows themselves stay one line each where XLA's rule allows.

Each row's comment states the XLA edge rule it implements; tests/interpret/test_elementwise.py
checks every row against XLA:CPU through jax.

Note [Low-precision floats]
    XLA:CPU computes bf16, f16 and the fp8/fp4 types by upcasting to f32, computing, and rounding
    the result back to the operand type (round to nearest even), once per instruction. We do the
    same. Within f32, +, -, *, /, sqrt, fmod are IEEE-exact in numpy and so bit-exact with XLA.
    Transcendentals (exp, log, tanh, ...) are evaluated in f64 and rounded to f32: XLA uses its
    own polynomial approximations, so those agree within a few ULP, not bit for bit.

Note [Denormals]
    XLA:CPU runs with the x86 flush-to-zero and denormals-are-zero modes, so f32/f64 subnormal
    inputs and results become zero there (e.g. converting the f32 subnormal 1e-39 to f64 gives 0).
    That is a property of the CPU runtime, not of HLO: XLA's reference HloEvaluator keeps
    subnormals, and so do we. The tests keep subnormals out of the f32/f64 comparisons.

Note [Quiet numpy]
    Integer arithmetic wraps (two's complement) and float arithmetic follows IEEE; numpy's
    overflow / divide / invalid warnings are expected outcomes here, not errors, so apply_* run
    the rows under ``np.errstate(all="ignore")``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

__all__ = [
    "UNARY",
    "BINARY",
    "TERNARY",
    "COMPARISON_DIRECTIONS",
    "apply_unary",
    "apply_binary",
    "apply_ternary",
    "compare",
    "convert",
    "bitcast_convert",
    "reduce_precision",
    "bit_width",
]

Array = np.ndarray[Any, Any]


def _contiguous(x: Array) -> Array:
    """``x`` in C order, keeping 0-d arrays 0-d (np.ascontiguousarray makes them 1-d)."""
    return x if x.flags.c_contiguous else x.copy(order="C")

# --------------------------------------------------------------------------------------------
# Dtype facts


_SUB_BYTE_INTS: dict[np.dtype[Any], tuple[int, bool]] = {
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
_FLOATS = frozenset(np.dtype(t) for t in [np.float16, np.float32, np.float64, *_ML_FLOATS])
# Floats narrower than f32: computed in f32 (Note [Low-precision floats]).
_NARROW_FLOATS = _FLOATS - {np.dtype(np.float32), np.dtype(np.float64)}
_F4 = np.dtype(ml_dtypes.float4_e2m1fn)
_FNUZ = frozenset(np.dtype(t) for t in (ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz,
                                        ml_dtypes.float8_e4m3b11fnuz))
_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
_UINT_OF_BYTES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_INT_OF_BYTES = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _is_float(dt: np.dtype[Any]) -> bool:
    return dt in _FLOATS


def _is_complex(dt: np.dtype[Any]) -> bool:
    return dt.kind == "c"


def _is_int(dt: np.dtype[Any]) -> bool:
    """True for s2..s64 and u2..u64 (not pred)."""
    return dt.kind in "iu" or dt in _SUB_BYTE_INTS


def _int_bits(dt: np.dtype[Any]) -> tuple[int, bool]:
    """(bit width, signed) of an integer dtype."""
    if dt in _SUB_BYTE_INTS:
        return _SUB_BYTE_INTS[dt]
    return dt.itemsize * 8, dt.kind == "i"


def bit_width(dtype: Any) -> int:
    """XLA's primitive_util::BitWidth: 4 for s4/u4/f4e2m1fn, 2 for s2/u2, 8 for pred."""
    dt = np.dtype(dtype)
    if dt in _SUB_BYTE_INTS:
        return _SUB_BYTE_INTS[dt][0]
    if dt == _F4:
        return 4
    return dt.itemsize * 8


def _container(dt: np.dtype[Any]) -> np.dtype[Any]:
    """The numpy int dtype integer rows compute in: itself, or int8/uint8 for sub-byte ints."""
    if dt in _SUB_BYTE_INTS:
        return np.dtype(np.int8 if _SUB_BYTE_INTS[dt][1] else np.uint8)
    return dt


def _wrap_to(values: Array, dt: np.dtype[Any]) -> Array:
    """Two's-complement wrap integer ``values`` (any int dtype) into ``dt``."""
    if dt not in _SUB_BYTE_INTS:
        return values.astype(dt)
    bits, signed = _SUB_BYTE_INTS[dt]
    v = values.astype(np.int64) & ((1 << bits) - 1)
    if signed:
        v = v - ((v >> (bits - 1)) << bits)  # sign-extend the top bit
    return v.astype(dt)


def _unsigned_bits(x: Array) -> Array:
    """The raw bit pattern of each element as an unsigned integer (uint8 for sub-byte types)."""
    dt = x.dtype
    if dt in _SUB_BYTE_INTS:
        bits, _ = _SUB_BYTE_INTS[dt]
        return (x.astype(np.int8).view(np.uint8) & ((1 << bits) - 1)).astype(np.uint8)
    if dt == _F4:
        return _contiguous(x).view(np.uint8) & np.uint8(0xF)
    if dt == np.bool_:
        return x.astype(np.uint8)
    return _contiguous(x).view(_UINT_OF_BYTES[dt.itemsize])


def _from_unsigned_bits(u: Array, dt: np.dtype[Any]) -> Array:
    """Inverse of _unsigned_bits: build an array of ``dt`` from bit patterns."""
    if dt in _SUB_BYTE_INTS:
        return _wrap_to(u, dt)
    if dt == _F4:
        return (u.astype(np.uint8) & np.uint8(0xF)).view(_F4)
    if dt == np.bool_:
        return u != 0
    return _contiguous(u.astype(_UINT_OF_BYTES[dt.itemsize])).view(dt)


# --------------------------------------------------------------------------------------------
# Unary rows


def _negate(x: Array) -> Array:
    if x.dtype == np.bool_:
        return x.copy()
    return np.negative(x)


def _abs(x: Array) -> Array:
    # abs(INT_MIN) wraps to INT_MIN; abs of a complex number is its real modulus.
    if x.dtype == np.bool_ or x.dtype.kind == "u":
        return x.copy()
    return np.abs(x)


def _sign(x: Array) -> Array:
    # sign(NaN) = NaN, sign(±0) = ±0, ints: -1/0/1 (unsigned: 0/1); complex: x / |x|, 0 -> 0.
    # XLA divides each part by the real |x| (not a complex division), so a finite part over an
    # infinite |x| gives ±0 (sign(1 + inf i) = 0 + nan i) and a NaN |x| gives NaN parts.
    if _is_complex(x.dtype):
        mag = np.abs(x)
        out = np.empty_like(x)
        out.real = np.real(x) / mag
        out.imag = np.imag(x) / mag
        return np.where(mag == 0, x, out)
    if _is_float(x.dtype):
        return np.where((x == 0) | np.isnan(x), x, np.copysign(np.ones_like(x), x))
    return np.sign(x)


def _round_afz(x: Array) -> Array:
    # Halfway cases away from zero (llvm.round); x - trunc(x) is exact, so no x + 0.5 error.
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.ones_like(x), x), t)


def _not(x: Array) -> Array:
    # pred: logical not; integers: bitwise complement.
    if x.dtype == np.bool_:
        return np.logical_not(x)
    return np.invert(x)


def _popcnt(x: Array) -> Array:
    # Counts the ones in each element's own bit width (s4 -1 -> 4). XLA:CPU answers differently
    # for negative s2/s4 (it counts the sign-extended byte); see the test for that case.
    u = _unsigned_bits(x)
    per_byte = _POPCOUNT_BYTE[_contiguous(u).view(np.uint8)]
    counts = per_byte.reshape(*u.shape, u.dtype.itemsize).sum(axis=-1, dtype=np.int64)
    return _wrap_to(counts, x.dtype)


_POPCOUNT_BYTE = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _count_leading_zeros(x: Array) -> Array:
    # clz(0) = the bit width; counted in the element's own width (s4 1 -> 3).
    width = bit_width(x.dtype)
    u = _unsigned_bits(x).astype(np.uint64)
    length = np.zeros(u.shape, np.int64)
    shift = 32
    while shift:  # binary search for the highest set bit: log2(width) vectorized steps
        if shift < width:
            high = (u >> np.uint64(shift)) != 0
            length += np.where(high, shift, 0)
            u = np.where(high, u >> np.uint64(shift), u)
        shift //= 2
    length += (u != 0).astype(np.int64)
    return _wrap_to(width - length, x.dtype)


def _real(x: Array) -> Array:
    return np.real(x).copy() if _is_complex(x.dtype) else x.copy()


def _imag(x: Array) -> Array:
    return np.imag(x).copy() if _is_complex(x.dtype) else np.zeros_like(x)


def _is_finite(x: Array) -> Array:
    return np.isfinite(x)


def _logistic(x: Array) -> Array:
    return 1 / (1 + np.exp(-x))


def _rsqrt(x: Array) -> Array:
    return 1 / np.sqrt(x)


def _cbrt(x: Array) -> Array:
    if _is_complex(x.dtype):
        return np.power(x, 1 / 3)
    return np.cbrt(x)


# Cephes erf/erfc for f64, as XLA's chlo legalization (ErfImpl64 / ErfcImpl64).
_ERF_T = [9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
          7.00332514112805075473e3, 5.55923013010394962768e4]
_ERF_U = [1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
          2.26290000613890934246e4, 4.92673942608635921086e4]
_ERFC_P = [2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
           9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2]
_ERFC_Q = [1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
           1.65666309194161350182e3, 5.57535340817727675546e2]
_ERFC_R = [5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
           6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0]
_ERFC_S = [1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
           1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0]
# Eigen's f32 rational approximation on [-4, 4], as XLA's f32 erf.
_ERF_ALPHA = [-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
              -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
              -1.60960333262415e-02]
_ERF_BETA = [-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
             -7.37332916720468e-03, -1.42647390514189e-02]


def _polynomial(x: Array, coefficients: list[float]) -> Array:
    """Horner evaluation, coefficients from the highest power down, in x's dtype."""
    result = np.zeros_like(x)
    for c in coefficients:
        result = result * x + x.dtype.type(c)
    return result


def _erf(x: Array) -> Array:
    if x.dtype == np.float64:
        z = x * x
        small = x * _polynomial(z, _ERF_T) / _polynomial(z, _ERF_U)
        a = np.abs(x)
        e = np.exp(-z)
        mid = e * _polynomial(a, _ERFC_P) / _polynomial(a, _ERFC_Q)
        big = e * _polynomial(a, _ERFC_R) / _polynomial(a, _ERFC_S)
        erfc = np.where(-z < -7.09782712893383996843e2, 0.0, np.where(a < 8, mid, big))
        erfc = np.where(x < 0, 2 - erfc, erfc)
        return np.where(a < 1, small, 1 - erfc)
    x32 = np.clip(x.astype(np.float32), np.float32(-4), np.float32(4))
    z = x32 * x32
    return (x32 * _polynomial(z, _ERF_ALPHA) / _polynomial(z, _ERF_BETA)).astype(x.dtype)


def _transcendental(f: Callable[[Array], Array]) -> Callable[[Array], Array]:
    """Evaluate ``f`` in f64 (c128) and round back: see Note [Low-precision floats]."""

    def row(x: Array) -> Array:
        wide = np.complex128 if _is_complex(x.dtype) else np.float64
        return np.asarray(f(x.astype(wide))).astype(x.dtype)

    row.__name__ = getattr(f, "__name__", "row")
    return row


UNARY: dict[str, Callable[[Array], Array]] = {
    "abs": _abs,                                  # abs(INT_MIN) = INT_MIN; complex -> real
    "negate": _negate,                            # ints wrap: -INT_MIN = INT_MIN
    "copy": np.copy,
    "exponential": _transcendental(np.exp),
    "exponential-minus-one": _transcendental(np.expm1),
    "log": _transcendental(np.log),               # log(0) = -inf, log(x<0) = NaN
    "log-plus-one": _transcendental(np.log1p),
    "sqrt": np.sqrt,                              # IEEE-exact; sqrt(-0) = -0
    "rsqrt": _transcendental(_rsqrt),
    "cbrt": _transcendental(_cbrt),
    "tanh": _transcendental(np.tanh),
    "logistic": _transcendental(_logistic),
    "sine": _transcendental(np.sin),
    "cosine": _transcendental(np.cos),
    "tan": _transcendental(np.tan),
    "acos": _transcendental(np.arccos),           # |x| > 1 -> NaN
    "asin": _transcendental(np.arcsin),           # |x| > 1 -> NaN
    "atan": _transcendental(np.arctan),
    "acosh": _transcendental(np.arccosh),         # x < 1 -> NaN
    "asinh": _transcendental(np.arcsinh),
    "atanh": _transcendental(np.arctanh),         # ±1 -> ±inf, |x| > 1 -> NaN
    "cosh": _transcendental(np.cosh),
    "sinh": _transcendental(np.sinh),
    "erf": _erf,                                  # XLA's own approximations (Cephes / Eigen)
    "floor": np.floor,
    "ceil": np.ceil,
    "round-nearest-afz": _round_afz,              # 0.5 -> 1, -0.5 -> -1, 2.5 -> 3
    "round-nearest-even": np.rint,                # 0.5 -> 0, 2.5 -> 2
    "sign": _sign,                                # NaN -> NaN, -0 -> -0
    "not": _not,                                  # pred: logical; ints: bitwise
    "is-finite": _is_finite,                      # -> pred
    "popcnt": _popcnt,
    "count-leading-zeros": _count_leading_zeros,  # clz(0) = bit width
    "real": _real,                                # real(x) = x for real types
    "imag": _imag,                                # imag(x) = 0 for real types
}


# --------------------------------------------------------------------------------------------
# Binary rows


def _is_signed_int(dt: np.dtype[Any]) -> bool:
    return _is_int(dt) and _int_bits(dt)[1]


def _int_limits(dt: np.dtype[Any]) -> tuple[int, int]:
    bits, signed = _int_bits(dt)
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _divide(a: Array, b: Array) -> Array:
    # Integers truncate toward zero; x / 0 = -1 (all bits set, so UINT_MAX for unsigned);
    # INT_MIN / -1 = INT_MIN. Floats and complex: IEEE / numpy complex division.
    if not (_is_int(a.dtype) or a.dtype == np.bool_):
        return np.true_divide(a, b)
    zero = b == 0
    overflow = _signed_overflow(a, b)
    safe_b = np.where(zero | overflow, np.ones_like(b), b)
    q = np.floor_divide(a, safe_b)
    if _is_signed_int(a.dtype):  # floor -> trunc: step toward zero when signs differ
        q = q + ((a - q * safe_b != 0) & ((a < 0) != (safe_b < 0))).astype(q.dtype)
    q = np.where(overflow, a, q)
    return np.where(zero, np.invert(np.zeros_like(a)), q)


def _signed_overflow(a: Array, b: Array) -> Array:
    if not _is_signed_int(a.dtype):
        return np.zeros(np.broadcast(a, b).shape, bool)
    lo, _ = _int_limits(a.dtype)
    return (a == lo) & (b == -1)


def _remainder(a: Array, b: Array) -> Array:
    # Sign of the dividend (C fmod / %). Integers: x % 0 = x, INT_MIN % -1 = 0.
    if not (_is_int(a.dtype) or a.dtype == np.bool_):
        return np.fmod(a, b)
    zero = b == 0
    safe_b = np.where(zero | _signed_overflow(a, b), np.ones_like(b), b)
    return np.where(zero, a, np.fmod(a, safe_b))


def _maximum(a: Array, b: Array) -> Array:
    # NaN propagates; -0.0 < +0.0 (max(-0, +0) = +0 in either order).
    r = np.maximum(a, b)
    if _is_float(a.dtype):
        both_zero = (a == 0) & (b == 0)
        r = np.where(both_zero & ~(np.signbit(a) & np.signbit(b)), np.zeros_like(r), r)
    return r


def _minimum(a: Array, b: Array) -> Array:
    # NaN propagates; -0.0 < +0.0 (min(-0, +0) = -0 in either order).
    r = np.minimum(a, b)
    if _is_float(a.dtype):
        both_zero = (a == 0) & (b == 0)
        r = np.where(both_zero & (np.signbit(a) | np.signbit(b)), -np.zeros_like(r), r)
    return r


def _power(a: Array, b: Array) -> Array:
    # Integers follow XLA's elemental emitter: pow(x, 0) = 1 (also 0^0); a negative exponent
    # gives 1 for base 1, ±1 for base -1 (by parity), else 0 (0^-1 = 0); otherwise wrapping
    # exponentiation by squaring over the exponent's low 6 bits only (XLA stops after 6 steps,
    # so 3^65 = 3^1 in any width: a surprise, but it is what XLA:CPU computes).
    if a.dtype == np.bool_:
        return a | ~b
    if not _is_int(a.dtype):
        if _is_complex(a.dtype):  # 0^0 = 1 (numpy gives NaN)
            return np.where((a == 0) & (b == 0), np.ones_like(a), np.power(a, b))
        return np.power(a, b)
    a, b = np.broadcast_arrays(a, b)
    result = np.ones_like(a)
    base = a.copy()
    e = b.astype(np.uint64)
    for _ in range(6):
        odd = (e & np.uint64(1)) != 0
        result = np.where(odd, result * base, result)
        base = base * base
        e = e >> np.uint64(1)
    # The sign test reads the exponent's bits as signed, for unsigned types too (u8 200 < 0).
    is_negative = _as_signed(b) < 0
    is_minus_one = a == np.invert(np.zeros_like(a))
    odd = (b & np.ones_like(b)) != 0
    negative = np.where(a == 1, np.ones_like(a),
                        np.where(is_minus_one, np.where(odd, np.invert(np.zeros_like(a)),
                                                        np.ones_like(a)), np.zeros_like(a)))
    return np.where(is_negative, negative, result)


def _shift_count(a: Array, b: Array) -> tuple[Array, Array]:
    """(count >= bit width as unsigned, count clamped into range) for the shift rows."""
    width = bit_width(a.dtype)
    if _is_signed_int(b.dtype):  # negative counts read as unsigned: huge, so out of range
        out_of_range = (b < 0) | (b >= width)
    else:
        out_of_range = b >= width
    return out_of_range, np.where(out_of_range, np.zeros_like(b), b)


def _shift_left(a: Array, b: Array) -> Array:
    # count >= bit width (or negative) -> 0.
    big, n = _shift_count(a, b)
    return np.where(big, np.zeros_like(a), np.left_shift(a, n.astype(a.dtype)))


def _shift_right_arithmetic(a: Array, b: Array) -> Array:
    # Shifts in copies of the sign bit; count >= bit width -> 0 or -1 (all sign bits).
    big, n = _shift_count(a, b)
    s = _as_signed(a)
    r = np.where(big, np.where(s < 0, -np.ones_like(s), np.zeros_like(s)),
                 np.right_shift(s, n.astype(s.dtype)))
    return _back_from(r, a.dtype)


def _shift_right_logical(a: Array, b: Array) -> Array:
    # Shifts in zeros; count >= bit width -> 0.
    big, n = _shift_count(a, b)
    u = _as_unsigned(a)
    r = np.where(big, np.zeros_like(u), np.right_shift(u, n.astype(u.dtype)))
    return _back_from(r, a.dtype)


def _as_signed(a: Array) -> Array:
    if a.dtype.kind == "u":
        return a.view(_INT_OF_BYTES[a.dtype.itemsize])
    return a


def _as_unsigned(a: Array) -> Array:
    if a.dtype.kind == "i":
        return a.view(_UINT_OF_BYTES[a.dtype.itemsize])
    return a


def _back_from(r: Array, dt: np.dtype[Any]) -> Array:
    return r.view(dt) if r.dtype != dt and r.dtype.itemsize == dt.itemsize else r


def _complex(re: Array, im: Array) -> Array:
    # Assembled part by part: re + 1j * im would turn an infinite im into NaN + inf j.
    dt = np.complex128 if re.dtype == np.float64 else np.complex64
    re, im = np.broadcast_arrays(re, im)
    out = np.empty(re.shape, dt)
    out.real = re
    out.imag = im
    return out


def _atan2(a: Array, b: Array) -> Array:
    # Evaluated in f64 and rounded back, as the unary transcendentals.
    if _is_complex(a.dtype):  # XLA: -i * log((b + i a) / sqrt(b^2 + a^2))
        wa, wb = a.astype(np.complex128), b.astype(np.complex128)
        return (-1j * np.log((wb + 1j * wa) / np.sqrt(wb * wb + wa * wa))).astype(a.dtype)
    return np.arctan2(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


def _mulhi_u64(a: Array, b: Array) -> Array:
    # High 64 bits of a 64x64-bit unsigned product, from 32-bit halves (no 128-bit numpy type).
    lo32 = np.uint64(0xFFFFFFFF)
    a_lo, a_hi = a & lo32, a >> np.uint64(32)
    b_lo, b_hi = b & lo32, b >> np.uint64(32)
    ll, lh, hl, hh = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (ll >> np.uint64(32)) + (lh & lo32) + (hl & lo32)
    return hh + (lh >> np.uint64(32)) + (hl >> np.uint64(32)) + (mid >> np.uint64(32))


def _mulhi(a: Array, b: Array) -> Array:
    # The high half of the double-width product: signed for signed types, unsigned otherwise.
    dt = a.dtype
    bits, signed = _int_bits(dt)
    with np.errstate(over="ignore"):
        if bits <= 32:
            wide = np.int64 if signed else np.uint64
            return ((a.astype(wide) * b.astype(wide)) >> wide(bits)).astype(dt)
        ua, ub = a.astype(np.uint64), b.astype(np.uint64)
        hi = _mulhi_u64(ua, ub)
        if signed:  # hi_s = hi_u - (a < 0 ? b : 0) - (b < 0 ? a : 0), modulo 2^64
            hi = hi - np.where(a < 0, ub, np.uint64(0)) - np.where(b < 0, ua, np.uint64(0))
        return hi.astype(dt)


BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add,                                      # ints wrap
    "subtract": np.subtract,                            # ints wrap
    "multiply": np.multiply,                            # ints wrap
    "divide": _divide,                                  # x/0 = -1 (all ones), MIN/-1 = MIN
    "remainder": _remainder,                            # fmod sign; x%0 = x, MIN%-1 = 0
    "maximum": _maximum,                                # NaN wins; -0 < +0
    "minimum": _minimum,                                # NaN wins; -0 < +0
    "power": _power,                                    # ints: see _power
    "atan2": _atan2,                                    # atan2(±0, -0) = ±pi, per IEEE
    "mulhi": _mulhi,                                    # high half; signed per the type
    "and": np.bitwise_and,                              # pred: logical
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "shift-left": _shift_left,                          # count >= width -> 0
    "shift-right-arithmetic": _shift_right_arithmetic,  # count >= width -> sign fill
    "shift-right-logical": _shift_right_logical,        # count >= width -> 0
    "complex": _complex,                                # (f32, f32) -> c64
}


# --------------------------------------------------------------------------------------------
# Ternary rows


def _clamp(lo: Array, x: Array, hi: Array) -> Array:
    # HLO operand order clamp(min, operand, max) = min(max(operand, min), max), with the NaN and
    # signed-zero rules of maximum/minimum; min and max may be scalars.
    return _minimum(_maximum(x, lo), hi)


def _select(pred: Array, on_true: Array, on_false: Array) -> Array:
    return np.where(pred, on_true, on_false)


TERNARY: dict[str, Callable[[Array, Array, Array], Array]] = {
    "select": _select,  # pred may be a scalar
    "clamp": _clamp,
}


# --------------------------------------------------------------------------------------------
# Applying rows: the shared dtype rules


# Rows that must see sub-byte integers in their own dtype (they count bits in its width).
_OWN_WIDTH_ROWS = frozenset({"popcnt", "count-leading-zeros", "mulhi"})
# Rows that must see sub-byte integers as bit patterns: unsigned for logical, signed for
# arithmetic shifts (u4 8 >>a 1 = 12; s4 -1 >>l 1 = 7).
_PATTERN_ROWS = {"shift-right-logical": False, "shift-right-arithmetic": True}


def _widen(x: Array, op: str) -> Array:
    """Operand as the rows compute on it: narrow floats in f32, sub-byte ints in int8/uint8."""
    dt = x.dtype
    if dt in _NARROW_FLOATS:
        return x.astype(np.float32)
    if dt in _SUB_BYTE_INTS and op not in _OWN_WIDTH_ROWS:
        if op in _PATTERN_ROWS:
            bits, _ = _SUB_BYTE_INTS[dt]
            u = _unsigned_bits(x)
            if _PATTERN_ROWS[op]:
                return (u.astype(np.int8) ^ np.int8(1 << (bits - 1))) - np.int8(1 << (bits - 1))
            return u
        return x.astype(_container(dt))
    return x


def _narrow(r: Array, dt: np.dtype[Any]) -> Array:
    """Result back in the operand dtype ``dt`` (pred and complex results are left alone)."""
    if dt in _NARROW_FLOATS and r.dtype == np.float32:
        return r.astype(dt)
    if dt in _SUB_BYTE_INTS and _is_int(r.dtype):
        return _wrap_to(r, dt)
    return r


def apply_unary(op: str, x: Array) -> Array:
    """Evaluate the elementwise unary HLO opcode ``op`` (its text, e.g. "tanh") on ``x``."""
    with np.errstate(all="ignore"):
        return _narrow(np.asarray(UNARY[op](_widen(x, op))), x.dtype)


def apply_binary(op: str, a: Array, b: Array) -> Array:
    """Evaluate the elementwise binary HLO opcode ``op`` (e.g. "shift-left") on ``a``, ``b``."""
    with np.errstate(all="ignore"):
        return _narrow(np.asarray(BINARY[op](_widen(a, op), _widen(b, op))), a.dtype)


def apply_ternary(op: str, a: Array, b: Array, c: Array) -> Array:
    """Evaluate ``select(pred, on_true, on_false)`` or ``clamp(min, operand, max)``."""
    with np.errstate(all="ignore"):
        out_dtype = b.dtype
        r = TERNARY[op](a if op == "select" else _widen(a, op), _widen(b, op), _widen(c, op))
        return _narrow(np.asarray(r), out_dtype)


# --------------------------------------------------------------------------------------------
# Compare


COMPARISON_DIRECTIONS: dict[str, Callable[[Array, Array], Array]] = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


def _default_compare_type(dt: np.dtype[Any]) -> str:
    if _is_float(dt) or _is_complex(dt):
        return "FLOAT"
    if _is_signed_int(dt):
        return "SIGNED"
    return "UNSIGNED"  # unsigned ints and pred


def _total_order_key(x: Array) -> Array:
    """Signed int64 keys ordering floats as -NaN < -inf < ... < -0 < +0 < ... < inf < NaN.

    The key reads the bits as sign-magnitude, as XLA does, so it orders NaNs by payload too.
    f8e8m0fnu has no sign bit: its bits are the key. The fnuz types' only NaN (the bits of
    -0.0) sorts below everything, as on XLA:CPU.
    """
    u = _unsigned_bits(x).astype(np.uint64)
    if x.dtype == _E8M0:
        return u.astype(np.int64)
    width = bit_width(x.dtype)
    negative = (u >> np.uint64(width - 1)) != 0
    magnitude = (u & np.uint64((1 << (width - 1)) - 1)).astype(np.int64)
    key = np.where(negative, -magnitude - 1, magnitude)
    if x.dtype in _FNUZ:
        key = np.where(u == np.uint64(1 << (width - 1)), np.int64(-(1 << (width - 1)) - 1), key)
    return key


def compare(lhs: Array, rhs: Array, direction: str, compare_type: str | None = None) -> Array:
    """XLA ``compare``: a pred array, ``direction`` in EQ NE LT LE GT GE.

    ``compare_type`` (FLOAT, TOTALORDER, SIGNED, UNSIGNED) defaults from the dtype as XLA's
    parser does. FLOAT is IEEE (any NaN makes EQ/LT/... false and NE true, -0 == +0);
    TOTALORDER orders by sign-magnitude bits; SIGNED/UNSIGNED read integer bits that way.
    """
    fn = COMPARISON_DIRECTIONS[direction]
    dt = lhs.dtype
    kind = compare_type or _default_compare_type(dt)
    if kind == "TOTALORDER" and _is_float(dt):
        return fn(_total_order_key(lhs), _total_order_key(rhs))
    if _is_int(dt) and kind in ("SIGNED", "UNSIGNED"):
        want_signed = kind == "SIGNED"
        if _int_bits(dt)[1] != want_signed:  # read the bits the other way
            bits, _ = _int_bits(dt)
            u_l, u_r = _unsigned_bits(lhs).astype(np.int64), _unsigned_bits(rhs).astype(np.int64)
            if want_signed:
                u_l = u_l - ((u_l >> (bits - 1)) << bits)
                u_r = u_r - ((u_r >> (bits - 1)) << bits)
            if bits == 64:  # int64 cannot hold u64: use the native reinterpreting view
                view = np.int64 if want_signed else np.uint64
                return fn(_contiguous(lhs).view(view), _contiguous(rhs).view(view))
            return fn(u_l, u_r)
    if dt in _NARROW_FLOATS:
        return fn(lhs.astype(np.float32), rhs.astype(np.float32))
    if dt in _SUB_BYTE_INTS:
        return fn(lhs.astype(np.int8), rhs.astype(np.int8))
    return fn(lhs, rhs)


# --------------------------------------------------------------------------------------------
# Convert, bitcast-convert, reduce-precision


def convert(x: Array, to_dtype: Any) -> Array:
    """XLA ``convert`` of ``x`` to ``to_dtype``.

    * float -> int: truncate toward zero, saturate to the int range, NaN -> 0.
    * int -> narrower int: wrap (two's complement); any -> pred: ``x != 0``.
    * float -> float: round to nearest even; overflow goes to inf, or for types without inf
      (f8e4m3fn, fnuz, f4e2m1fn) as ml_dtypes/XLA define it; NaN -> -0.0 for f4e2m1fn (no NaN).
      XLA:CPU rounds f64 -> f16/bf16 through f32 (twice) but f64 -> fp8/fp4 once.
    * complex -> real (and pred): the real part; real -> complex: imaginary part 0.

    XLA:CPU saturates f4e2m1fn ±6.0 to the int range when converting to integers; we give ±6
    (see tests/interpret/test_elementwise.py, KNOWN_XLA_CPU_DIFFERENCES).
    """
    src, dst = x.dtype, np.dtype(to_dtype)
    with np.errstate(all="ignore"):
        if src == dst:
            return x.copy()
        if _is_complex(src):
            if _is_complex(dst):
                return x.astype(dst)
            return convert(np.real(x).copy(), dst)  # also for pred: real(x) != 0
        if dst == np.bool_:
            return (x.astype(np.float32) if src in _NARROW_FLOATS else x) != 0
        if _is_complex(dst):
            real_dtype = np.float64 if dst == np.complex128 else np.float32
            return convert(x, real_dtype).astype(dst)
        if src == np.bool_:
            x, src = x.astype(np.uint8), np.dtype(np.uint8)
        if src in _SUB_BYTE_INTS:
            x, src = x.astype(_container(src)), _container(src)
        if _is_int(dst):
            if _is_float(src):
                return _float_to_int(x, dst)
            return _wrap_to(x, dst)
        # dst is a float.
        if _is_int(src):
            return x.astype(dst)
        return _float_to_float(x, dst)


def _float_to_int(x: Array, dst: np.dtype[Any]) -> Array:
    bits, signed = _int_bits(dst)
    lo, hi = _int_limits(dst)
    t = np.trunc(x.astype(np.float64))  # exact for every float type
    too_big = t >= 2.0 ** (bits - 1 if signed else bits)  # powers of two: exact thresholds
    too_small = t < float(lo)
    in_range = ~(too_big | too_small | np.isnan(t))
    wide = np.int64 if signed else np.uint64
    v = np.where(in_range, t, 0).astype(wide)
    v = np.where(too_big, wide(hi), np.where(too_small, wide(lo), v))
    return _wrap_to(v, dst)


_F16_AND_BF16 = frozenset({np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)})


def _round_to_odd_f32(x: Array) -> Array:
    """f64 -> f32 rounding toward zero, with the last bit set when inexact ("round to odd").

    Rounding that result to a type with at most 22 significand bits gives the correctly rounded
    f64 value (the odd bit breaks every false tie), so it stands in for a direct f64 -> fp8
    conversion, which ml_dtypes lacks (it goes through f32 and rounds twice)."""
    r = x.astype(np.float32)
    wide = r.astype(np.float64)
    over = np.isfinite(x) & (np.abs(wide) > np.abs(x))  # rounded away from zero: step back
    r = np.where(over, np.nextafter(r, np.float32(0)), r)
    inexact = np.isfinite(x) & (r.astype(np.float64) != x)
    bits = _contiguous(r).view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(np.float32)


def _float_to_float(x: Array, dst: np.dtype[Any]) -> Array:
    # XLA:CPU converts f64 to f16 and bf16 through f32, rounding twice (1 + 2^-11 + 2^-40 -> 1.0
    # in f16), but rounds f64 to the fp8/fp4 types once, directly.
    source = x
    if x.dtype == np.float64 and dst in _F16_AND_BF16:
        x = x.astype(np.float32)
    elif x.dtype == np.float64 and dst in _NARROW_FLOATS:
        x = _round_to_odd_f32(x)
    try:
        r = x.astype(dst)
    except TypeError:  # ml_dtypes has no direct cast between some fp8 pairs: go through f32,
        r = x.astype(np.float32).astype(dst)  # exact for every source narrower than f32
    if dst == _E8M0 and source.dtype == np.float64:
        # f8e8m0fnu has no zero and no subnormals: from f64, XLA:CPU gives NaN below its
        # smallest value 2^-127 (from f32, f32 subnormals round up to 2^-127 instead).
        r = np.where(source < 2.0**-127, np.array(0xFF, np.uint8).view(_E8M0), r)
    if dst == _F4:  # f4e2m1fn has no NaN: XLA gives -0.0 (bits 0b1000)
        nan = np.isnan(x.astype(np.float32) if x.dtype in _NARROW_FLOATS else x)
        r = np.where(nan, np.array(0x8, np.uint8).view(_F4), r)
    return r


def bitcast_convert(x: Array, to_dtype: Any) -> Array:
    """XLA ``bitcast-convert``: reinterpret each element's bits as ``to_dtype``.

    Equal bit widths keep the shape. A wider source gains a minor-most dimension of
    ``width(src) / width(dst)`` (f32[4] -> u8[4,4]); a narrower source loses its minor-most
    dimension, which must have that size (u8[4,4] -> f32[4]). Sub-element order is little-endian
    (element [..., 0] holds the lowest bits), as on XLA:CPU. s4/u4/f4 elements are 4 bits wide.
    """
    dst = np.dtype(to_dtype)
    src_width, dst_width = bit_width(x.dtype), bit_width(dst)
    u = _unsigned_bits(x)
    if src_width == dst_width:
        return _from_unsigned_bits(u, dst)
    if src_width > dst_width:
        k = src_width // dst_width
        shifts = (np.arange(k, dtype=np.uint64) * np.uint64(dst_width)).astype(np.uint64)
        parts = (u.astype(np.uint64)[..., None] >> shifts) & np.uint64((1 << dst_width) - 1)
        return _from_unsigned_bits(parts, dst)
    k = dst_width // src_width
    if x.ndim == 0 or x.shape[-1] != k:
        raise ValueError(
            f"bitcast-convert {x.dtype}{list(x.shape)} -> {dst}: the minor-most dimension must"
            f" be {k}"
        )
    shifts = (np.arange(k, dtype=np.uint64) * np.uint64(src_width)).astype(np.uint64)
    combined = np.bitwise_or.reduce(u.astype(np.uint64) << shifts, axis=-1)
    return _from_unsigned_bits(combined, dst)


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
    nbits = x.dtype.itemsize * 8
    src_mantissa_bits = ml_dtypes.finfo(x.dtype).nmant
    src_exponent_bits = nbits - 1 - src_mantissa_bits
    uint = _UINT_OF_BYTES[x.dtype.itemsize]
    one = 1
    full = (1 << nbits) - 1
    bits = _contiguous(x).view(uint)
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
