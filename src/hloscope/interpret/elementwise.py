"""XLA's elementwise semantics as pure numpy functions: unary, binary, ternary and compare.

The interpreter looks an opcode's text up in ``UNARY``, ``BINARY`` or ``TERNARY`` and calls the
row's function on numpy arrays (dtypes from numpy and ml_dtypes; scalars are 0-d arrays). The
functions never see the IR. Call them through ``apply_unary`` / ``apply_binary`` /
``apply_ternary``, which add the rules every row shares (Note [Low-precision floats], Note
[Quiet numpy], and complex operands going to XLA:CPU's own formulas in complex_ops.py); the
rows themselves stay one line each where XLA's rule allows. convert, bitcast-convert and
reduce-precision live in converts.py; dtype facts and bit patterns in dtype_bits.py.

Each row's comment states the XLA edge rule it implements; tests/interpret/test_elementwise.py
checks every row against XLA:CPU through jax.

Note [Low-precision floats]
    XLA:CPU computes bf16, f16 and the fp8/fp4 types by upcasting to f32, computing, and rounding
    the result back to the operand type (round to nearest even), once per instruction. We do the
    same. Within f32, +, -, *, /, sqrt, fmod are IEEE-exact in numpy and so bit-exact with XLA.
    Transcendentals (exp, log, tanh, ...) are evaluated in f64 and rounded to f32: XLA uses its
    own polynomial approximations, so those agree within a few ULP, not bit for bit.

Denormals follow the run's floating-point environment (Note [Denormals] in float_env.py):
    XLA:CPU's by default, which reads and writes f32/bf16/f64 denormals of arithmetic as zero.

Note [Quiet numpy]
    Integer arithmetic wraps (two's complement) and float arithmetic follows IEEE; numpy's
    overflow / divide / invalid warnings are expected outcomes here, not errors, so apply_* run
    the rows under ``np.errstate(all="ignore")``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hloscope.interpret import complex_ops
from hloscope.interpret.converts import bitcast_convert, convert, reduce_precision
from hloscope.interpret.dtype_bits import (
    E8M0,
    FNUZ,
    NARROW_FLOATS,
    SUB_BYTE_INTS,
    Array,
    as_signed,
    as_unsigned,
    bit_width,
    container,
    contiguous,
    int_bits,
    int_limits,
    is_complex,
    is_float,
    is_int,
    is_signed_int,
    unsigned_bits,
    wrap_to,
)
from hloscope.interpret.float_env import daz, ftz, keeps_denormals

__all__ = [
    "UNARY",
    "BINARY",
    "TERNARY",
    "COMPARISON_DIRECTIONS",
    "apply_unary",
    "apply_binary",
    "apply_ternary",
    "compare",
    "total_order_key",
    # Re-exported for the handlers that import them from here (converts.py defines them).
    "convert",
    "bitcast_convert",
    "reduce_precision",
    "bit_width",
]

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
    # sign(NaN) = NaN, sign(±0) = ±0, ints: -1/0/1 (unsigned: 0/1); complex: complex_ops.
    if is_float(x.dtype):
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
    u = unsigned_bits(x)
    # The bytes along a new minor-most axis (a 0-d array cannot change its item size in a view).
    per_byte = _POPCOUNT_BYTE[contiguous(u).reshape(*u.shape, 1).view(np.uint8)]
    counts = per_byte.sum(axis=-1, dtype=np.int64)
    return wrap_to(counts, x.dtype)


_POPCOUNT_BYTE = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _count_leading_zeros(x: Array) -> Array:
    # clz(0) = the bit width; counted in the element's own width (s4 1 -> 3).
    width = bit_width(x.dtype)
    u = unsigned_bits(x).astype(np.uint64)
    length = np.zeros(u.shape, np.int64)
    shift = 32
    while shift:  # binary search for the highest set bit: log2(width) vectorized steps
        if shift < width:
            high = (u >> np.uint64(shift)) != 0
            length += np.where(high, shift, 0)
            u = np.where(high, u >> np.uint64(shift), u)
        shift //= 2
    length += (u != 0).astype(np.int64)
    return wrap_to(width - length, x.dtype)


def _real(x: Array) -> Array:
    return np.real(x).copy() if is_complex(x.dtype) else x.copy()


def _imag(x: Array) -> Array:
    return np.imag(x).copy() if is_complex(x.dtype) else np.zeros_like(x)


def _is_finite(x: Array) -> Array:
    return np.isfinite(x)


def _logistic(x: Array) -> Array:
    return 1 / (1 + np.exp(-x))


def _rsqrt(x: Array) -> Array:
    return 1 / np.sqrt(x)


def _cbrt(x: Array) -> Array:
    if is_complex(x.dtype):
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
        wide = np.complex128 if is_complex(x.dtype) else np.float64
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






def _divide(a: Array, b: Array) -> Array:
    # Integers truncate toward zero; x / 0 = -1 (all bits set, so UINT_MAX for unsigned);
    # INT_MIN / -1 = INT_MIN. Floats and complex: IEEE / numpy complex division.
    if not (is_int(a.dtype) or a.dtype == np.bool_):
        return np.true_divide(a, b)
    zero = b == 0
    overflow = _signed_overflow(a, b)
    safe_b = np.where(zero | overflow, np.ones_like(b), b)
    q = np.floor_divide(a, safe_b)
    if is_signed_int(a.dtype):  # floor -> trunc: step toward zero when signs differ
        q = q + ((a - q * safe_b != 0) & ((a < 0) != (safe_b < 0))).astype(q.dtype)
    q = np.where(overflow, a, q)
    return np.where(zero, np.invert(np.zeros_like(a)), q)


def _signed_overflow(a: Array, b: Array) -> Array:
    if not is_signed_int(a.dtype):
        return np.zeros(np.broadcast(a, b).shape, bool)
    lo, _ = int_limits(a.dtype)
    return (a == lo) & (b == -1)


def _remainder(a: Array, b: Array) -> Array:
    # Sign of the dividend (C fmod / %). Integers: x % 0 = x, INT_MIN % -1 = 0.
    if not (is_int(a.dtype) or a.dtype == np.bool_):
        return np.fmod(a, b)
    zero = b == 0
    safe_b = np.where(zero | _signed_overflow(a, b), np.ones_like(b), b)
    return np.where(zero, a, np.fmod(a, safe_b))


def _maximum(a: Array, b: Array) -> Array:
    # NaN propagates; -0.0 < +0.0 (max(-0, +0) = +0 in either order).
    r = np.maximum(a, b)
    if is_float(a.dtype):
        both_zero = (a == 0) & (b == 0)
        r = np.where(both_zero & ~(np.signbit(a) & np.signbit(b)), np.zeros_like(r), r)
    return r


def _minimum(a: Array, b: Array) -> Array:
    # NaN propagates; -0.0 < +0.0 (min(-0, +0) = -0 in either order).
    r = np.minimum(a, b)
    if is_float(a.dtype):
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
    if not is_int(a.dtype):  # complex: complex_ops
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
    is_negative = as_signed(b) < 0
    is_minus_one = a == np.invert(np.zeros_like(a))
    odd = (b & np.ones_like(b)) != 0
    negative = np.where(a == 1, np.ones_like(a),
                        np.where(is_minus_one, np.where(odd, np.invert(np.zeros_like(a)),
                                                        np.ones_like(a)), np.zeros_like(a)))
    return np.where(is_negative, negative, result)


def _shift_count(a: Array, b: Array) -> tuple[Array, Array]:
    """(count >= bit width as unsigned, count clamped into range) for the shift rows."""
    width = bit_width(a.dtype)
    if is_signed_int(b.dtype):  # negative counts read as unsigned: huge, so out of range
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
    s = as_signed(a)
    r = np.where(big, np.where(s < 0, -np.ones_like(s), np.zeros_like(s)),
                 np.right_shift(s, n.astype(s.dtype)))
    return _back_from(r, a.dtype)


def _shift_right_logical(a: Array, b: Array) -> Array:
    # Shifts in zeros; count >= bit width -> 0.
    big, n = _shift_count(a, b)
    u = as_unsigned(a)
    r = np.where(big, np.zeros_like(u), np.right_shift(u, n.astype(u.dtype)))
    return _back_from(r, a.dtype)






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
    # Evaluated in f64 and rounded back, as the unary transcendentals; complex: complex_ops.
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
    bits, signed = int_bits(dt)
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
    if dt in NARROW_FLOATS:
        return x.astype(np.float32)
    if dt in SUB_BYTE_INTS and op not in _OWN_WIDTH_ROWS:
        if op in _PATTERN_ROWS:
            bits, _ = SUB_BYTE_INTS[dt]
            u = unsigned_bits(x)
            if _PATTERN_ROWS[op]:
                return (u.astype(np.int8) ^ np.int8(1 << (bits - 1))) - np.int8(1 << (bits - 1))
            return u
        return x.astype(container(dt))
    return x


def _narrow(r: Array, dt: np.dtype[Any]) -> Array:
    """Result back in the operand dtype ``dt`` (pred and complex results are left alone)."""
    if dt in NARROW_FLOATS and r.dtype == np.float32:
        return r.astype(dt)
    if dt in SUB_BYTE_INTS and is_int(r.dtype):
        return wrap_to(r, dt)
    return r


def apply_unary(op: str, x: Array) -> Array:
    """Evaluate the elementwise unary HLO opcode ``op`` (its text, e.g. "tanh") on ``x``."""
    with np.errstate(all="ignore"):
        if is_complex(x.dtype) and op in complex_ops.UNARY:
            return complex_ops.UNARY[op](x)
        if keeps_denormals(op, x.dtype):
            return _narrow(np.asarray(UNARY[op](_widen(x, op))), x.dtype)
        return ftz(_narrow(np.asarray(UNARY[op](_widen(daz(x), op))), x.dtype))


def apply_binary(op: str, a: Array, b: Array) -> Array:
    """Evaluate the elementwise binary HLO opcode ``op`` (e.g. "shift-left") on ``a``, ``b``."""
    with np.errstate(all="ignore"):
        if is_complex(a.dtype) and op in complex_ops.BINARY:
            return complex_ops.BINARY[op](a, b)
        if op in ("remainder", "atan2"):  # XLA:CPU passes a tiny first operand through
            # unchanged where it is the answer (Note [Denormals]); only the second reads as 0
            r = _narrow(np.asarray(BINARY[op](_widen(a, op), _widen(daz(b), op))), a.dtype)
            return ftz(r) if op == "atan2" and a.dtype == np.float64 else r
        return ftz(_narrow(np.asarray(BINARY[op](_widen(daz(a), op), _widen(daz(b), op))), a.dtype))


def apply_ternary(op: str, a: Array, b: Array, c: Array) -> Array:
    """Evaluate ``select(pred, on_true, on_false)`` or ``clamp(min, operand, max)``."""
    with np.errstate(all="ignore"):
        out_dtype = b.dtype
        if op == "select":
            return _narrow(np.asarray(TERNARY[op](a, _widen(b, op), _widen(c, op))), out_dtype)
        r = TERNARY[op](_widen(daz(a), op), _widen(daz(b), op), _widen(daz(c), op))
        return ftz(_narrow(np.asarray(r), out_dtype))


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
    if is_float(dt) or is_complex(dt):
        return "FLOAT"
    if is_signed_int(dt):
        return "SIGNED"
    return "UNSIGNED"  # unsigned ints and pred


def total_order_key(x: Array) -> Array:
    """Signed int64 keys ordering floats as -NaN < -inf < ... < -0 < +0 < ... < inf < NaN.

    The key reads the bits as sign-magnitude, as XLA does, so it orders NaNs by payload too.
    f8e8m0fnu has no sign bit: its bits are the key. The fnuz types' only NaN (the bits of
    -0.0) sorts below everything, as on XLA:CPU.
    """
    u = unsigned_bits(x).astype(np.uint64)
    if x.dtype == E8M0:
        return u.astype(np.int64)
    width = bit_width(x.dtype)
    negative = (u >> np.uint64(width - 1)) != 0
    magnitude = (u & np.uint64((1 << (width - 1)) - 1)).astype(np.int64)
    key = np.where(negative, -magnitude - 1, magnitude)
    if x.dtype in FNUZ:
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
    if kind == "FLOAT":  # Note [Denormals] in float_env.py
        lhs, rhs = daz(lhs), daz(rhs)
    if kind == "TOTALORDER" and is_float(dt):
        return fn(total_order_key(lhs), total_order_key(rhs))
    if is_int(dt) and kind in ("SIGNED", "UNSIGNED"):
        want_signed = kind == "SIGNED"
        if int_bits(dt)[1] != want_signed:  # read the bits the other way
            bits, _ = int_bits(dt)
            u_l, u_r = unsigned_bits(lhs).astype(np.int64), unsigned_bits(rhs).astype(np.int64)
            if want_signed:
                u_l = u_l - ((u_l >> (bits - 1)) << bits)
                u_r = u_r - ((u_r >> (bits - 1)) << bits)
            if bits == 64:  # int64 cannot hold u64: use the native reinterpreting view
                view = np.int64 if want_signed else np.uint64
                return fn(contiguous(lhs).view(view), contiguous(rhs).view(view))
            return fn(u_l, u_r)
    if dt in NARROW_FLOATS:
        return fn(lhs.astype(np.float32), rhs.astype(np.float32))
    if dt in SUB_BYTE_INTS:
        return fn(lhs.astype(np.int8), rhs.astype(np.int8))
    return fn(lhs, rhs)


