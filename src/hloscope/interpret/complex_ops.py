"""XLA:CPU's complex elementwise formulas, as pure numpy functions on c64/c128 arrays.

XLA:CPU maps each elementwise HLO op to an MHLO op and lowers complex ones with MLIR's
ComplexToStandard conversion (xla/codegen/emitters/elemental_hlo_to_mlir.cc,
mlir_hlo/mhlo/transforms/map_mhlo_to_scalar_op.h, mlir/lib/Conversion/ComplexToStandard). The
formulas there are not C99 Annex G's (which numpy follows): exp(inf + inf i) is NaN + NaN i,
|inf + NaN i| is NaN, 1 / (-inf - inf i) is -0 + 0i by Smith's division with special cases, and
atan2 or logistic of huge values overflow where a careful formula would not. This module
transcribes those lowerings so hloscope gives what XLA:CPU gives, edge values included.

Every function computes in the parts' own type (f32 for c64, f64 for c128), so intermediate
overflow happens where XLA's does; the real functions inside (exp, sin, atan2, ...) are
numpy's, which agree with XLA's approximations within a few ULP. ``UNARY`` and ``BINARY`` map
an opcode's text to its function; elementwise.py consults them first for complex operands.

Note [Complex results XLA's evaluator disagrees with]
    XLA's constant folder (HloEvaluator) uses std::complex, so an instruction whose operands
    are all constants can fold to a different value than the compiled code computes
    (exp(inf + 0i) for instance). hloscope follows the compiled code, which is what a program
    with real inputs gets.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hloscope.interpret.dtype_bits import Array, component_dtype

__all__ = ["UNARY", "BINARY", "divide", "multiply", "absolute"]


def _parts(z: Array) -> tuple[Array, Array]:
    return np.real(z).astype(component_dtype(z.dtype)), np.imag(z).astype(component_dtype(z.dtype))


def _make(re: Array, im: Array) -> Array:
    """A complex array from its parts, assembled part by part (re + 1j * im would turn an
    infinite im into NaN + inf i)."""
    re, im = np.broadcast_arrays(re, im)
    out = np.empty(re.shape, np.complex128 if re.dtype == np.float64 else np.complex64)
    out.real, out.imag = re, im
    return out


def _const(like: Array, value: float) -> Array:
    return like.dtype.type(value)


def _abs_parts(re: Array, im: Array, fn: str = "abs") -> Array:
    """ComplexToStandard's computeAbs: |z|, sqrt(|z|) or 1/sqrt(|z|) as max * sqrt(1 + r^2)
    with r = min/max; when that is NaN (0/0, inf/inf, a NaN part) the result is min(|re|, |im|)
    (NaN-propagating, so |inf + NaN i| is NaN)."""
    one = _const(re, 1.0)
    a, b = np.abs(re), np.abs(im)
    big, small = np.maximum(a, b), np.minimum(a, b)  # NaN-propagating, as arith.maximumf
    ratio = small / big
    ratio_sq_plus_one = ratio * ratio + one
    if fn == "rsqrt":
        ratio_sq_plus_one = one / np.sqrt(ratio_sq_plus_one)
        small, big = one / np.sqrt(small), one / np.sqrt(big)
    if fn == "sqrt":
        result = np.sqrt(big) * np.power(ratio_sq_plus_one, _const(re, 0.25))
    else:
        result = big * np.sqrt(ratio_sq_plus_one)
    return np.where(np.isnan(result), small, result)


def absolute(z: Array) -> Array:
    """|z| as a real array of the parts' type: the correctly rounded hypot (XLA:CPU agrees
    with it bit for bit on finite values), except that a NaN part gives NaN, also next to an
    infinite one (C's hypot gives inf there)."""
    re, im = _parts(z)
    return np.where(np.isnan(re) | np.isnan(im), _const(re, np.nan), np.abs(z))


def _mul(ar: Array, ai: Array, br: Array, bi: Array) -> tuple[Array, Array]:
    # The textbook formula, no recovery of infinities from NaN (Annex G would).
    return ar * br - ai * bi, ai * br + ar * bi


def multiply(a: Array, b: Array) -> Array:
    """a * b by the textbook formula: (inf + 0i) * (1 + 0i) is inf + NaN i."""
    return _make(*_mul(*_parts(a), *_parts(b)))


def _div(ar: Array, ai: Array, br: Array, bi: Array) -> tuple[Array, Array]:
    """Smith's division with ComplexToStandard's special cases (convertDivToStandardUsing-
    RangeReduction), which apply only when both parts of Smith's result are NaN."""
    zero, one = _const(ar, 0.0), _const(ar, 1.0)
    inf = _const(ar, np.inf)
    ratio1 = br / bi  # |br| < |bi|
    denom1 = bi + ratio1 * br
    re1, im1 = (ar * ratio1 + ai) / denom1, (ai * ratio1 - ar) / denom1
    ratio2 = bi / br
    denom2 = br + ratio2 * bi
    re2, im2 = (ar + ai * ratio2) / denom2, (ai - ar * ratio2) / denom2
    br_abs, bi_abs, ar_abs, ai_abs = np.abs(br), np.abs(bi), np.abs(ar), np.abs(ai)
    re5 = np.where(br_abs < bi_abs, re1, re2)
    im5 = np.where(br_abs < bi_abs, im1, im2)
    # Case 1: zero denominator, a numerator with at most one NaN part: ±inf times the parts.
    to_inf = (~np.isnan(ar) | ~np.isnan(ai)) & (br_abs == 0) & (bi_abs == 0)
    signed_inf = np.copysign(inf, br)
    # Case 2: infinite numerator, finite denominator.
    inf_num = ((ar_abs == inf) | (ai_abs == inf)) & (br_abs < inf) & (bi_abs < inf)
    ar_unit = np.copysign(np.where(ar_abs == inf, one, zero), ar)
    ai_unit = np.copysign(np.where(ai_abs == inf, one, zero), ai)
    re3, im3 = inf * (ar_unit * br + ai_unit * bi), inf * (ai_unit * br - ar_unit * bi)
    # Case 3: finite numerator, infinite denominator.
    inf_den = (ar_abs < inf) & (ai_abs < inf) & ((br_abs == inf) | (bi_abs == inf))
    br_unit = np.copysign(np.where(br_abs == inf, one, zero), br)
    bi_unit = np.copysign(np.where(bi_abs == inf, one, zero), bi)
    re4, im4 = zero * (ar * br_unit + ai * bi_unit), zero * (ai * br_unit - ar * bi_unit)
    special_re = np.where(to_inf, signed_inf * ar, np.where(inf_num, re3, np.where(inf_den, re4, re5)))
    special_im = np.where(to_inf, signed_inf * ai, np.where(inf_num, im3, np.where(inf_den, im4, im5)))
    both_nan = np.isnan(re5) & np.isnan(im5)
    return np.where(both_nan, special_re, re5), np.where(both_nan, special_im, im5)


def divide(a: Array, b: Array) -> Array:
    """a / b by Smith's algorithm with XLA's infinity and zero cases."""
    return _make(*_div(*_parts(a), *_parts(b)))


def _exp(z: Array) -> Array:
    # exp(re) (cos im + i sin im), with exp(re / 2) applied twice where exp(re) overflows (so
    # exp(100 + 1e-30 i) keeps a finite imaginary part in c64), and an imaginary part of
    # exactly 0 when im is 0 (exp(inf + 0i) = inf + 0i, exp(NaN + 0i) = NaN + 0i).
    re, im = _parts(z)
    e, half = np.exp(re), np.exp(re * _const(re, 0.5))
    c, s = np.cos(im), np.sin(im)
    overflow = e == np.inf
    real = np.where(overflow, half * c * half, e * c)
    imag = np.where(im == 0, _const(re, 0.0), np.where(overflow, half * s * half, e * s))
    return _make(real, imag)


_COSM1 = [4.7377507964246204691685e-14, -1.1470284843425359765671e-11,
          2.0876754287081521758361e-9, -2.7557319214999787979814e-7,
          2.4801587301570552304991e-5, -1.3888888888888872993737e-3,
          4.1666666666666666609054e-2]


def _cosm1(x: Array) -> Array:
    # Cephes cosm1: cos(x) - 1 without cancellation for x^2 < (pi/4)^2.
    x2 = x * x
    poly = np.full_like(x, _COSM1[0])
    for c in _COSM1[1:]:
        poly = poly * x2 + _const(x, c)
    small = x2 * x2 * poly + _const(x, -0.5) * x2
    return np.where(x2 >= _const(x, 0.61685), np.cos(x) - _const(x, 1.0), small)


def _expm1(z: Array) -> Array:
    re, im = _parts(z)
    em1 = np.expm1(re)
    cm1 = _cosm1(im)
    real = em1 * (cm1 + _const(re, 1.0)) + cm1
    imag = np.where(im == 0, _const(re, 0.0), (em1 + _const(re, 1.0)) * np.sin(im))
    return _make(real, imag)


def _split(x: Array) -> tuple[Array, Array]:
    """Veltkamp's split of x into a high half and the rest (x = high + low exactly)."""
    c = _const(x, 134217729.0 if x.dtype == np.float64 else 4097.0)
    cx = c * x
    high = cx + (x - cx)
    return high, x - high


def _square(x: Array) -> tuple[Array, Array]:
    """Dekker's exact square: x * x = high + low."""
    high = x * x
    xh, xl = _split(x)
    low = (((-high) + xh * xh) + xh * xl + xh * xl) + xl * xl
    return high, low


def _log(z: Array) -> Array:
    # log|z| without overflow: log(max) + log1p((min/max)^2) / 2, and near |z| = 1, where that
    # cancels, log1p(|z|^2 - 1) / 2 with |z|^2 - 1 summed exactly from Dekker's squares.
    re, im = _parts(z)
    half, one = _const(re, 0.5), _const(re, 1.0)
    y2h, y2l = _square(im)
    x2h, x2l = _square(re)
    mxh, mnh = np.where(y2h > x2h, y2h, x2h), np.where(y2h > x2h, x2h, y2h)
    s2 = -one + mxh
    s1 = s2 + mnh
    s0 = s1 + y2l
    total = s0 + x2l
    low = (mxh - (s2 + one)) + (mnh - (s1 - s2)) + (y2l - (s0 - s1)) + (x2l - (total - s0))
    total = total + low
    a, b = np.abs(re), np.abs(im)
    big, small = np.maximum(a, b), np.minimum(a, b)
    ratio = np.where(small == big, one, small / big)
    far = np.log(big) + half * np.log1p(ratio * ratio)
    return _make(np.where(np.abs(total) < half, half * np.log1p(total), far), np.arctan2(im, re))


def _log1p(z: Array) -> Array:
    re, im = _parts(z)
    one = _const(re, 1.0)
    re1 = re + one
    a, b = np.abs(re1), np.abs(im)
    big, small = np.maximum(a, b), np.minimum(a, b)
    ratio = small / big
    real = np.log1p(np.where(re1 >= b, re, big - one)) + _const(re, 0.5) * np.log1p(
        np.where(small == big, one, ratio * ratio))
    return _make(real, np.arctan2(im, re1))


def _trig_parts(z: Array) -> tuple[Array, Array, Array, Array]:
    """(0.5 e^im, 0.5 / e^im, sin re, cos re): the building blocks of sin and cos."""
    re, im = _parts(z)
    e = np.exp(im)
    half = _const(re, 0.5)
    return half * e, half / e, np.sin(re), np.cos(re)


def _sin(z: Array) -> Array:
    scaled, reciprocal, s, c = _trig_parts(z)
    return _make((scaled + reciprocal) * s, (scaled - reciprocal) * c)


def _cos(z: Array) -> Array:
    scaled, reciprocal, s, c = _trig_parts(z)
    return _make((reciprocal + scaled) * c, (reciprocal - scaled) * s)


def _hypot_unit(mx: Array, mn: Array) -> Array:
    """hypot(mx, mn) for mx >= mn >= 0 as functional_algorithms computes it."""
    one, two = _const(mx, 1.0), _const(mx, 2.0)
    r = (mn / mx) ** 2
    sqa = np.sqrt(one + r)
    return np.where(mx == mn, _const(mx, np.sqrt(2.0)) * mx,
                    np.where((sqa == one) & (r > 0), mx + mx * r / two, mx * sqa))


def _sqrt(z: Array) -> Array:
    # Kahan's sqrt(z) = u + i y / (2u) with u = sqrt((|z| + |x|) / 2), rescaled where |z| + |x|
    # under- or overflows (the functional_algorithms formula StableHLO and XLA adopted).
    x, y = _parts(z)
    zero, one, two = _const(x, 0.0), _const(x, 1.0), _const(x, 2.0)
    sq2 = _const(x, np.sqrt(2.0))
    ax, ay = np.abs(x), np.abs(y)
    same, greater, less = ax == ay, ax > ay, ax < ay
    sq_ax, sq_ay = np.sqrt(ax), np.sqrt(ay)
    u_general = np.sqrt(_hypot_unit(np.maximum(ax, ay), np.minimum(ax, ay)) / two + ax / two)
    rescale = (u_general == zero) | (u_general == np.inf)
    r0 = np.where(same, one, np.where(less, ax / ay, ay / ax))
    h = _hypot_unit(np.maximum(one, np.abs(r0)), np.minimum(one, np.abs(r0)))
    sq_1h, sq_rh = np.sqrt(one + h), np.sqrt(r0 + h)
    u = np.where(same, sq_ax * _const(x, 1.5537739740300374) / sq2,
                 np.where(rescale, np.where(greater, sq_ax * (sq_1h / sq2), sq_ay * (sq_rh / sq2)),
                          u_general))
    ratio = np.where(same, one, np.where(less, sq_ax / sq_ay, sq_ay / sq_ax))
    ay_over_u = np.where(same, sq_ay / _const(x, 2.19736822693562),
                         np.where(rescale, np.where(greater, sq_ay * ratio / (sq_1h * sq2),
                                                    sq_ay / (sq_rh * sq2)),
                                  ay / (u_general * two)))
    negative_y = y < zero
    real = np.where(x >= zero, u, ay_over_u)
    imag = np.where(x < zero, np.where(negative_y, -u, u),
                    np.where(negative_y, -ay_over_u, ay_over_u))
    return _make(real, imag)


def _sqrt_polar(z: Array) -> Array:
    """sqrt(|z|) (cos(arg/2) + i sin(arg/2)) with ComplexToStandard's infinity cases: the
    square root atan2's lowering uses (sqrt(-1 + 0i) = -4.4e-8 + i in c64)."""
    re, im = _parts(z)
    zero, inf = _const(re, 0.0), _const(re, np.inf)
    abs_sqrt = _abs_parts(re, im, "sqrt")
    half_arg = np.arctan2(im, re) * _const(re, 0.5)
    c, s = np.cos(half_arg), np.sin(half_arg)
    real = abs_sqrt * c
    imag = np.where(s == 0, zero, abs_sqrt * s)  # sin(atan2(0, inf)) * inf would be NaN
    im_inf = np.abs(im) == inf
    real = np.where((re == -inf) & ~im_inf & ~np.isnan(im), zero, real)
    real = np.where(im_inf | (re == inf), inf, real)
    imag = np.where(np.isnan(abs_sqrt), _const(re, np.nan), imag)
    imag = np.where(im_inf | (re == -inf), np.copysign(inf, im), imag)
    is_zero = abs_sqrt == 0
    return _make(np.where(is_zero, zero, real), np.where(is_zero, zero, imag))


def _log_polar(z: Array) -> Array:
    """log|z| + i arg z with |z| from computeAbs (overflowing at |z| near the largest float):
    the logarithm atan2's lowering uses."""
    re, im = _parts(z)
    return _make(np.log(absolute(z)), np.arctan2(im, re))


def _rsqrt(z: Array) -> Array:
    re, im = _parts(z)
    zero, inf = _const(re, 0.0), _const(re, np.inf)
    abs_rsqrt = _abs_parts(re, im, "rsqrt")
    arg = np.arctan2(im, re) * _const(re, -0.5)
    real, imag = abs_rsqrt * np.cos(arg), abs_rsqrt * np.sin(arg)
    to_zero = ((np.abs(im) == inf) & np.isnan(re)) | (np.abs(re) == inf)
    real = np.where(to_zero, np.copysign(zero, re), real)
    imag = np.where(to_zero, _const(re, -1.0) * np.copysign(zero, im), imag)
    at_zero = (re == 0) & (im == 0)
    return _make(np.where(at_zero, inf, real), np.where(at_zero, _const(re, np.nan), imag))


def _tanh_parts(re: Array, im: Array) -> tuple[Array, Array]:
    one, four, zero = _const(re, 1.0), _const(re, 4.0), _const(re, 0.0)
    inf = _const(re, np.inf)
    two_re = re + re
    e_plus = np.expm1(two_re)
    e_minus = np.expm1(_const(re, -1.0) * two_re)
    cos_im, sin_im = np.cos(im), np.sin(im)
    real_num = e_plus - e_minus
    imag_num = four * (cos_im * sin_im)
    exp_sum_minus_two = e_plus + e_minus
    denom = exp_sum_minus_two + cos_im * cos_im * four
    real = np.where(exp_sum_minus_two == inf, np.copysign(one, re), real_num / denom)
    imag = imag_num / denom
    abs_re_inf = np.abs(re) == inf
    imag_num_nan = np.isnan(imag_num)
    real = np.where(imag_num_nan & ~abs_re_inf, _const(re, np.nan), real)
    imag = np.where((im == 0) | (abs_re_inf & imag_num_nan), zero, imag)
    return real, imag


def _tanh(z: Array) -> Array:
    return _make(*_tanh_parts(*_parts(z)))


def _tan(z: Array) -> Array:
    # tan(x + yi) = -i tanh(-y + xi)
    re, im = _parts(z)
    real, imag = _tanh_parts(im * _const(re, -1.0), re)
    return _make(imag, real * _const(re, -1.0))


def _sign(z: Array) -> Array:
    re, im = _parts(z)
    mag = absolute(z)
    return np.where((re == 0) & (im == 0), z, _make(re / mag, im / mag))


def _abs(z: Array) -> Array:
    return absolute(z)


def _logistic(z: Array) -> Array:
    # 1 / (1 + exp(-z)), each step a complex op of its own.
    e = _exp(_make(*(-p for p in _parts(z))))
    er, ei = _parts(e)
    one, zero = _const(er, 1.0), _const(er, 0.0)
    return _make(*_div(one, zero, er + one, ei + zero))


def _atan2(y: Array, x: Array) -> Array:
    # -i * log((x + i y) / sqrt(x^2 + y^2)), every product a full complex multiplication.
    yr, yi = _parts(y)
    xr, xi = _parts(x)
    zero, one = _const(yr, 0.0), _const(yr, 1.0)
    x2r, x2i = _mul(xr, xi, xr, xi)
    y2r, y2i = _mul(yr, yi, yr, yi)
    root = _sqrt_polar(_make(x2r + y2r, x2i + y2i))
    iyr, iyi = _mul(zero, one, yr, yi)
    qr, qi = _div(xr + iyr, xi + iyi, *_parts(root))
    lr, li = _parts(_log_polar(_make(qr, qi)))
    return _make(*_mul(zero, -one, lr, li))


def _power(a: Array, b: Array) -> Array:
    # ComplexToStandard's pow: |a|^c e^(-d arg a) (cos q + i sin q), q = c arg a + d ln|a|,
    # with b = c + di, and the cases 0^b, a^0, 1^b and inf^c taken first.
    ar, ai = _parts(a)
    c, d = _parts(b)
    zero, one, inf = _const(ar, 0.0), _const(ar, 1.0), _const(ar, np.inf)
    mag = absolute(a)
    arg = np.arctan2(ai, ar)
    coeff = np.power(mag, c) * np.exp(-d * arg)
    q = c * arg + d * np.log(mag)
    re, im = coeff * np.cos(q), coeff * np.sin(q)
    at_zero = (mag == 0) & (d == 0) & (zero <= c)  # 0^c = 1 for c = 0, else 0
    re = np.where(at_zero, np.where(c == 0, one, zero), re)
    im = np.where(at_zero, zero, im)
    unit = ((c == 0) & (d == 0)) | ((ar == one) & (ai == 0))  # a^0 = 1, 1^b = 1
    re, im = np.where(unit, one, re), np.where(unit, zero, im)
    inf_base = (ar == inf) & (ai == 0) & (d == 0)
    re = np.where(inf_base & (c > 0), inf, np.where(inf_base & (c < 0), zero, re))
    im = np.where(inf_base & ((c > 0) | (c < 0)), zero, im)
    return _make(re, im)


def _lexicographic(a: Array, b: Array, less: bool) -> Array:
    """Whether a <= b (``less``) or a >= b, comparing (real, imaginary) in turn; any NaN in
    a compared pair makes that comparison false, as the ordered comparisons XLA emits."""
    ar, ai = _parts(a)
    br, bi = _parts(b)
    if less:
        return ((ar == br) & (ai <= bi)) | (ar <= br)
    return ((ar == br) & (ai >= bi)) | (ar >= br)


def _maximum(a: Array, b: Array) -> Array:
    # The lexicographically larger operand; a NaN makes the comparison false: b wins.
    return np.where(_lexicographic(a, b, less=False), a, b)


def _minimum(a: Array, b: Array) -> Array:
    return np.where(_lexicographic(a, b, less=True), a, b)


UNARY: dict[str, Callable[[Array], Array]] = {
    "abs": _abs,                        # |inf + NaN i| = NaN
    "exponential": _exp,                # exp(inf + 0i) = inf + NaN i
    "exponential-minus-one": _expm1,    # imaginary part exactly 0 when im = 0
    "log": _log,
    "log-plus-one": _log1p,
    "sqrt": _sqrt,                      # sqrt(-1 - 0i) = +i (the sign of -0 is ignored)
    "rsqrt": _rsqrt,
    "sine": _sin,
    "cosine": _cos,
    "tan": _tan,
    "tanh": _tanh,
    "sign": _sign,
    "logistic": _logistic,              # 1 / (1 + exp(-z)) by Smith's division
}

BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "multiply": multiply,
    "divide": divide,
    "atan2": _atan2,                    # overflows in x^2 + y^2 as XLA's does
    "power": _power,
    "maximum": _maximum,                # lexicographic; NaN makes the other operand win
    "minimum": _minimum,
}
